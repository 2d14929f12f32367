//! saxpy through an island: the HIP kernel (or, built with `--no-accel`, its C++ host fallback)
//! behind one generated `extern "C"` boundary, called from Rust through the bindgen bindings.
//! Prints the result and checks it; without an AMD GPU it says "no HIP device" and exits 2.

#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/mcpp_kernels.rs"));
}

fn main() {
    let n: u32 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n as usize];
    // SAFETY: both buffers hold `n` floats and outlive the call.
    let status = unsafe { kernels::saxpy_run(2.0, x.as_ptr(), y.as_mut_ptr(), n) };
    match status {
        0 => {}
        1 => {
            eprintln!("hip-saxpy: no HIP device is present (hipErrorNoDevice); this build needs an AMD GPU.");
            eprintln!(
                "hip-saxpy: build with `cargo mcpp build --no-accel` for the CPU host fallback."
            );
            std::process::exit(2);
        }
        s => {
            eprintln!("hip-saxpy: the kernel failed (status {s})");
            std::process::exit(3);
        }
    }
    let mut name = [0 as std::os::raw::c_char; 128];
    // SAFETY: `name` holds 128 bytes; the entry point writes a NUL-terminated string within them
    // and returns a static string.
    let (backend, device) = unsafe {
        let b = kernels::saxpy_backend(name.as_mut_ptr(), name.len() as u32);
        (
            std::ffi::CStr::from_ptr(b).to_string_lossy().into_owned(),
            std::ffi::CStr::from_ptr(name.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    };
    let bad = y
        .iter()
        .enumerate()
        .filter(|(i, v)| **v != 2.0 * *i as f32 + 1.0)
        .count();
    let accel = match env!("MCPP_BUILD_ACCEL") {
        "" => "none (--no-accel)",
        set => set,
    };
    println!(
        "saxpy on {backend} ({device}), accel `{accel}`: y[12345]={}",
        y[12345]
    );
    if bad != 0 {
        eprintln!("hip-saxpy: {bad} of {n} results are wrong");
        std::process::exit(1);
    }
    println!("OK: {n} floats");
}
