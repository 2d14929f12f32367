//! Version rules of toolchain packages: an exact version (a choice) or a floor (a requirement),
//! compared as dotted sequences of numbers (the versions are not semver: `13.0.88`, `2025.5`,
//! `13.3.5.0.6`).

use std::cmp::Ordering;

/// Order two versions as dotted sequences: numeric segments numerically, others as text, a
/// missing segment as 0 (`13.0` == `13.0.0` < `13.0.88` < `13.5`).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let sa: Vec<&str> = a.split('.').collect();
    let sb: Vec<&str> = b.split('.').collect();
    for i in 0..sa.len().max(sb.len()) {
        let x = sa.get(i).copied().unwrap_or("0");
        let y = sb.get(i).copied().unwrap_or("0");
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A version rule: `"13.0.88"` (exact: a choice) or `">=11.0"` (a floor: a requirement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionReq {
    /// This version.
    Exact(String),
    /// This version or newer.
    AtLeast(String),
}

impl VersionReq {
    /// Parse `"1.2.3"` or `">=1.2"`.
    ///
    /// # Errors
    /// A message (the caller names the file and key) for an empty version or another operator.
    pub fn parse(text: &str) -> std::result::Result<VersionReq, String> {
        let t = text.trim();
        let (floor, v) = match t.strip_prefix(">=") {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') || !v.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("`{text}` is not a version rule: write a version (\"13.1.1\", a choice) or a floor (\">=13.1\", a requirement)"));
        }
        Ok(if floor { VersionReq::AtLeast(v.to_string()) } else { VersionReq::Exact(v.to_string()) })
    }
    /// Whether `version` satisfies this rule.
    pub fn matches(&self, version: &str) -> bool {
        match self {
            VersionReq::Exact(v) => compare_versions(version, v) == Ordering::Equal,
            VersionReq::AtLeast(v) => compare_versions(version, v) != Ordering::Less,
        }
    }
}

impl std::fmt::Display for VersionReq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VersionReq::Exact(v) => write!(f, "{v}"),
            VersionReq::AtLeast(v) => write!(f, ">={v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_dotted_numbers() {
        assert_eq!(compare_versions("13.0.88", "13.5"), Ordering::Less);
        assert_eq!(compare_versions("13.0", "13.0.0"), Ordering::Equal);
        assert_eq!(compare_versions("2025.5", "13.1.1"), Ordering::Greater);
        assert_eq!(compare_versions("13.3.5.0.6", "13.3.5"), Ordering::Greater);
        assert!(VersionReq::parse(">= 11.0").unwrap().matches("13.1.1"));
        assert!(!VersionReq::parse(">=14").unwrap().matches("13.1.1"));
        assert!(VersionReq::parse("^1.0").is_err() && VersionReq::parse("").is_err() && VersionReq::parse("<2").is_err());
    }
}
