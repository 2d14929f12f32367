//! Launch two kernels embedded by cargo-mcpp: `affine` from PTX text (`kernels::affine_ptx()`)
//! and `scale` from a fat binary (`kernels::scale_fatbin()`), through cudarc's driver API. On a
//! machine without a CUDA driver or device it says "no CUDA device" and exits 2; a build
//! without an accelerator (`--no-accel`) has empty payloads and exits 3.

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
    let (ptx, fatbin) = (
        kernels::kernels::affine_ptx(),
        kernels::kernels::scale_fatbin(),
    );
    if ptx.text.is_empty() || fatbin.bytes.is_empty() {
        eprintln!("built without an accelerator (--no-accel): the payloads are empty; build with the manifest's `accel`");
        return ExitCode::from(3);
    }
    match run(ptx.text, fatbin.bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(ptx: &str, fatbin: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    println!(
        "device: {} (PTX {} bytes, fat binary {} bytes)",
        ctx.name()?,
        ptx.len(),
        fatbin.len()
    );
    let stream = ctx.default_stream();
    let affine = ctx
        .load_module(Ptx::from_src(ptx))?
        .load_function("affine")?;
    let scale = ctx
        .load_module(Ptx::from_binary(fatbin.to_vec()))?
        .load_function("scale")?;
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
        "affine (PTX) then scale (fat binary) on {n} elements: y[12345] = {}",
        y[12345]
    );
    if bad > 0 {
        return Err(format!("{bad} elements differ from (2x + 1) / 2").into());
    }
    println!("OK: both kernels ran from embedded device code");
    Ok(())
}
