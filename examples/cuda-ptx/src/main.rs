//! Launch two kernels embedded by cargo-mcpp through cudarc's driver API: `affine`, compiled
//! to a cubin and PTX per listed architecture, loaded from the image the generated selection
//! function picks for the GPU (`kernels::kernels::affine_select(major, minor)`: the cubin that fits,
//! else PTX the driver JIT-compiles), and `scale` from a fat binary. Kernel names are the
//! generated constants (`kernels::kernels::affine_entries::AFFINE`), read from the built images.
//!
//! Exit codes: 0 the results match the CPU; 1 a CUDA error or a wrong result; 2 no CUDA driver
//! or device on this machine (said in one line, never a crash); 3 a build without CUDA
//! (`--no-accel`: empty payloads) or no image for this GPU (the error names what was built).

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::process::ExitCode;

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
}

fn main() -> ExitCode {
    // SAFETY: only tries to load the driver library (libcuda), calling nothing in it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!(
            "no CUDA device: the CUDA driver library (libcuda) is not present on this machine"
        );
        return ExitCode::from(2);
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            eprintln!("no CUDA device: the driver reports none");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("no CUDA device: {e}");
            return ExitCode::from(2);
        }
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::NoImage(e)) => {
            eprintln!("{e}");
            ExitCode::from(3)
        }
        Err(Failure::Cuda(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

enum Failure {
    /// No embedded image fits this GPU (or the build has none).
    NoImage(String),
    /// The driver or the results said no.
    Cuda(Box<dyn std::error::Error>),
}

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Cuda(Box::new(e))
    }
}

/// The module of `image`, the way the driver takes it: PTX as text, a cubin or fat binary as bytes.
fn module(
    ctx: &std::sync::Arc<CudaContext>,
    image: &kernels::CudaImage,
) -> Result<std::sync::Arc<cudarc::driver::CudaModule>, Failure> {
    let ptx = match image.ptx() {
        Some(text) => Ptx::from_src(text),
        None => Ptx::from_binary(image.bytes.to_vec()),
    };
    Ok(ctx.load_module(ptx)?)
}

fn run() -> Result<(), Failure> {
    let ctx = CudaContext::new(0)?;
    let major =
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor =
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    let mut driver = 0;
    // SAFETY: the driver library is loaded (is_culib_present above); the pointer is a valid int.
    let _ = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    println!(
        "device: {} (compute capability {major}.{minor}), driver CUDA {}.{}",
        ctx.name()?,
        driver / 1000,
        driver % 1000 / 10
    );
    let affine_image = kernels::kernels::affine_select(major, minor)
        .map_err(|e| Failure::NoImage(e.to_string()))?;
    let scale_image = kernels::kernels::scale_select(major, minor)
        .map_err(|e| Failure::NoImage(e.to_string()))?;
    println!(
        "affine: {:?} for {} ({} bytes); scale: {:?} ({} bytes)",
        affine_image.kind,
        affine_image.arch,
        affine_image.bytes.len(),
        scale_image.kind,
        scale_image.bytes.len()
    );
    let affine =
        module(&ctx, &affine_image)?.load_function(kernels::kernels::affine_entries::AFFINE)?;
    let scale =
        module(&ctx, &scale_image)?.load_function(kernels::kernels::scale_entries::SCALE)?;
    let stream = ctx.default_stream();
    let n: u32 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.alloc_zeros::<f32>(n as usize)?;
    let cfg = LaunchConfig::for_num_elems(n);
    let (a, b, s) = (2.0f32, 1.0f32, 0.5f32);
    // SAFETY: the arguments match the kernels' signatures (float*, const float*, float, float,
    // unsigned) and (float*, float, unsigned); both buffers hold n floats.
    unsafe {
        stream
            .launch_builder(&affine)
            .arg(&mut y_dev)
            .arg(&x_dev)
            .arg(&a)
            .arg(&b)
            .arg(&n)
            .launch(cfg)?;
        stream
            .launch_builder(&scale)
            .arg(&mut y_dev)
            .arg(&s)
            .arg(&n)
            .launch(cfg)?;
    }
    let y = stream.clone_dtoh(&y_dev)?;
    let bad = (0..n as usize)
        .filter(|&i| y[i] != (a * x[i] + b) * s)
        .count();
    println!(
        "affine ({:?}) then scale ({:?}) on {n} elements: y[12345] = {}",
        affine_image.kind, scale_image.kind, y[12345]
    );
    if bad > 0 {
        return Err(Failure::Cuda(
            format!("{bad} elements differ from (2x + 1) / 2").into(),
        ));
    }
    println!("OK: both kernels ran from embedded device code");
    Ok(())
}
