//! The naming rules of the generated surface, one set
//! for Rust and C++ so that a payload has the same path in both languages:
//! `shaders/default/x.comp` -> `default_::x_comp` (Rust) and `default_::x_comp()` (C++).

/// Keywords of C++ (all standard reserved words; contextual `final`/`override`/`import`/
/// `module` excluded, as upstream).
pub const CPP_KEYWORDS: &[&str] = &[
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "char8_t",
    "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue",
    "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit",
    "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
    "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
];

/// Keywords of Rust (strict and reserved, all editions), plus `_`, which is no identifier.
pub const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct",
    "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", "_",
];

/// An identifier usable in both Rust and C++: every character (not byte: `ü` is one) outside
/// `[A-Za-z0-9_]` becomes one `_`; empty gives `fallback`; a leading digit gets a `_` prefix; a
/// keyword of C++ or Rust gets a trailing `_`; a name C++ reserves to the implementation by
/// its start (`__`, or `_` and a capital letter: `ü.dat` would be `__dat`) gets an `x` prefix
/// (`x__dat`).
pub fn identifier(raw: &str, fallback: &str) -> String {
    let mut s: String = raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() {
        s = fallback.to_string();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if CPP_KEYWORDS.contains(&s.as_str()) || RUST_KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    let mut chars = s.chars();
    if chars.next() == Some('_') && chars.next().is_some_and(|c| c == '_' || c.is_ascii_uppercase()) {
        s.insert(0, 'x');
    }
    s
}

/// The directory components of a `/`-separated relative path (`.` and empty dropped). A
/// backslash is a character of a name (Linux allows it in a file name), not a separator: the
/// walker builds every relative path with `/`.
pub fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".").collect()
}

/// The shallowest directory every path shares: the longest common prefix of the parent
/// directories' components (a single path gives its own directory).
pub fn common_base_dir<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut base: Option<Vec<String>> = None;
    for p in paths {
        let comps = components(p);
        let parent: Vec<String> = comps[..comps.len().saturating_sub(1)].iter().map(|s| s.to_string()).collect();
        base = Some(match base {
            None => parent,
            Some(b) => b.iter().zip(parent.iter()).take_while(|(a, b)| a == b).map(|(a, _)| a.clone()).collect(),
        });
    }
    base.unwrap_or_default()
}

/// The namespace segments of `path` below `base`, each made an [`identifier`] (fallback `dir`).
pub fn namespace_of(path: &str, base: &[String]) -> Vec<String> {
    let comps = components(path);
    let parent = &comps[..comps.len().saturating_sub(1)];
    if parent.len() < base.len() || parent.iter().zip(base).any(|(a, b)| a != b) {
        return Vec::new();
    }
    parent[base.len()..].iter().filter(|s| **s != "..").map(|s| identifier(s, "dir")).collect()
}

/// The default module root of a package: its name as an [`identifier`] (`vulkan-compute` ->
/// `vulkan_compute`).
pub fn module_root(package_name: &str) -> String {
    identifier(package_name, "app")
}

/// Check a dotted module name: each segment must already be an [`identifier`]; returns the
/// segments or the segment that is not, with the spelling that would work.
pub fn module_segments(name: &str) -> Result<Vec<String>, (String, String)> {
    let segs: Vec<&str> = name.split('.').collect();
    let mut out = Vec::new();
    for s in segs {
        if s.is_empty() || identifier(s, "") != s {
            return Err((s.to_string(), identifier(s, "part")));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_seed_rules() {
        assert_eq!(identifier("default", "x"), "default_");
        assert_eq!(identifier("type", "x"), "type_");
        assert_eq!(identifier("3d-blur", "x"), "_3d_blur");
        assert_eq!(identifier("", "dir"), "dir");
        assert_eq!(identifier("a.b c", "x"), "a_b_c");
        assert_eq!(identifier("_", "x"), "x__");
        assert_eq!(identifier("ü.dat", "x"), "x__dat");
        assert_eq!(identifier("grüße.txt", "x"), "gr__e_txt");
        assert_eq!(identifier("_Big", "x"), "x_Big");
        assert_eq!(identifier("_small", "x"), "_small");
        assert_eq!(identifier("back\\slash.txt", "x"), "back_slash_txt");
        assert_eq!(components("q/back\\slash.txt"), ["q", "back\\slash.txt"]);
        assert_eq!(identifier("module", "x"), "module");
    }

    #[test]
    fn base_and_namespaces() {
        let base = common_base_dir(["shaders/a/scale.comp", "shaders/b/scale.comp", "shaders/default/x.comp"]);
        assert_eq!(base, ["shaders"]);
        assert_eq!(namespace_of("shaders/default/x.comp", &base), ["default_"]);
        assert_eq!(common_base_dir(["shaders/a/x.comp"]), ["shaders", "a"]);
        assert_eq!(module_segments("my_app.shaders").unwrap(), ["my_app", "shaders"]);
        assert_eq!(module_segments("my-app.shaders").unwrap_err(), ("my-app".to_string(), "my_app".to_string()));
    }
}
