/// What kind of image a [`CudaImage`] is.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaImageKind {
    /// SASS for one real architecture (`sm_90`): loads with no JIT on that major architecture.
    Cubin,
    /// PTX for one virtual architecture (`compute_80`): the driver JIT-compiles it.
    Ptx,
    /// A fat binary: the driver loads the cubin that fits, else JIT-compiles its PTX.
    Fatbin,
}

/// The image a selection function chose for a GPU: what to hand to the driver
/// (`cuModuleLoadData`, cudarc's `CudaContext::load_module`).
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaImage {
    /// Cubin, PTX or fat binary.
    pub kind: CudaImageKind,
    /// The architecture it is built for (`sm_90`, `compute_80`; a fat binary's list).
    pub arch: &'static str,
    /// The image's bytes; PTX with its NUL after the text (what `cuModuleLoadData` reads).
    pub bytes: &'static [u8],
}

#[allow(dead_code)]
impl CudaImage {
    /// The PTX text without its NUL (for cudarc's `Ptx::from_src`); `None` for a binary image.
    pub fn ptx(&self) -> Option<&'static str> {
        match self.kind {
            CudaImageKind::Ptx => core::str::from_utf8(self.bytes.strip_suffix(&[0]).unwrap_or(self.bytes)).ok(),
            _ => None,
        }
    }
}

/// No image of a source loads on the GPU asked about: what was built, and what would fit.
#[allow(dead_code)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoCudaImage {
    /// The CUDA source, relative to the package root.
    pub source: &'static str,
    /// The compute capability asked about, (major, minor).
    pub capability: (u32, u32),
    /// The architectures built into this program (empty: none, e.g. a build without CUDA).
    pub built: Vec<&'static str>,
}

impl core::fmt::Display for NoCudaImage {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (major, minor) = self.capability;
        let built = if self.built.is_empty() { "nothing (this build's accelerator set leaves CUDA out)".to_string() } else { self.built.join(", ") };
        let cubins = if minor == 0 { format!("sm_{major}0") } else { format!("one of sm_{major}0 to sm_{major}{minor}") };
        let way_out = if self.built.is_empty() { "build with CUDA in the accelerator set" } else { "list the architecture in the manifest's `accel`" };
        write!(f, "no image of {} loads on a GPU of compute capability {major}.{minor}: built {built}; a cubin for {cubins}, or PTX for compute_XY with XY <= {major}{minor}, would: {way_out}", self.source)
    }
}

impl std::error::Error for NoCudaImage {}

/// The best of `images` for compute capability (`major`, `minor`): a fat binary that holds a
/// fitting image, else the exact cubin, else the cubin of the same major with the highest lower
/// minor, else the PTX of the highest virtual architecture not above it; an empty image is one
/// this build did not make. An architecture with a suffix (`sm_90a`) fits its own capability only.
#[allow(dead_code)]
fn cuda_select(source: &'static str, major: u32, minor: u32, images: &[CudaImage]) -> Result<CudaImage, NoCudaImage> {
    let cc = major * 10 + minor;
    let number = |arch: &str| -> Option<(u32, bool)> {
        let digits: String = arch.chars().filter(char::is_ascii_digit).collect();
        digits.parse().ok().map(|n| (n, arch.ends_with(|c: char| c.is_ascii_alphabetic())))
    };
    let cubin_fits = |arch: &str| matches!(number(arch), Some((n, suffixed)) if n == cc || (!suffixed && n / 10 == major && n <= cc));
    let ptx_fits = |arch: &str| matches!(number(arch), Some((n, suffixed)) if n <= cc && (!suffixed || n == cc));
    let built: Vec<&CudaImage> = images.iter().filter(|i| !i.bytes.is_empty()).collect();
    let fat = built.iter().find(|i| i.kind == CudaImageKind::Fatbin && i.arch.split(',').any(|a| if a.starts_with("compute_") { ptx_fits(a) } else { cubin_fits(a) }));
    let best = |kind: CudaImageKind, fits: &dyn Fn(&str) -> bool| built.iter().filter(|i| i.kind == kind && fits(i.arch)).max_by_key(|i| number(i.arch).map(|(n, _)| n)).copied();
    match fat.copied().or_else(|| best(CudaImageKind::Cubin, &cubin_fits)).or_else(|| best(CudaImageKind::Ptx, &ptx_fits)) {
        Some(image) => Ok(*image),
        None => Err(NoCudaImage { source, capability: (major, minor), built: built.iter().map(|i| i.arch).collect() }),
    }
}
