//! The kernel of `kernels/scale.cu`, embedded by cargo-mcpp as cubins and PTX, loaded with
//! cudarc's driver API: `kernels::scale_select(major, minor)` picks the cubin built for this
//! GPU, else PTX the driver JIT-compiles; `kernels::scale_entries::SCALE` is the kernel's name,
//! read from the built image. Exit codes: 0 done; 1 a CUDA error; 2 no CUDA driver or device;
//! 3 no image for this GPU (the message names what was built) or a build without CUDA.

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
        eprintln!("no CUDA device is present: the CUDA driver library (libcuda) is not installed");
        return ExitCode::from(2);
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            eprintln!("no CUDA device is present: the driver reports none");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("no CUDA device is present: {e}");
            return ExitCode::from(2);
        }
    }
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let major =
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor =
        ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    let image = match kernels::scale_select(major, minor) {
        Ok(image) => image,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(3));
        }
    };
    let module = match image.ptx() {
        Some(text) => ctx.load_module(Ptx::from_src(text))?,
        None => ctx.load_module(Ptx::from_binary(image.bytes.to_vec()))?,
    };
    let scale = module.load_function(kernels::scale_entries::SCALE)?;
    let stream = ctx.default_stream();
    let n: u32 = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = stream.clone_htod(&x)?;
    let s = 2.0f32;
    // SAFETY: the arguments match the kernel's signature (float*, float, unsigned); y holds n floats.
    unsafe {
        stream
            .launch_builder(&scale)
            .arg(&mut y)
            .arg(&s)
            .arg(&n)
            .launch(LaunchConfig::for_num_elems(n))?;
    }
    let y = stream.clone_dtoh(&y)?;
    println!("scale doubled {n} floats on {} (compute capability {major}.{minor}, {:?} for {}); y[100] = {}", ctx.name()?, image.kind, image.arch, y[100]);
    Ok(ExitCode::SUCCESS)
}
