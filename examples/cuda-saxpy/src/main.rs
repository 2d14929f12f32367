//! saxpy through an island: the CUDA kernel (or, built with `--no-accel`, its C++ host
//! fallback) behind one generated `extern "C"` boundary, called from Rust through the bindgen
//! bindings and from C++ through the generated module. Prints the result and checks it.

#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/mcpp_kernels.rs"));
}

extern "C" {
    /// `cpp/check.cpp`: y = 3x + 1 through the C++ seam module; 0 when every element is right.
    fn cxx_check_saxpy(n: u32) -> i32;
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
            eprintln!("cuda-saxpy: no CUDA device is present (or no NVIDIA driver); this build needs one.");
            eprintln!(
                "cuda-saxpy: build with `cargo mcpp build --no-accel` for the CPU host fallback."
            );
            std::process::exit(2);
        }
        s => {
            eprintln!("cuda-saxpy: the kernel failed (status {s})");
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
        eprintln!("cuda-saxpy: {bad} of {n} results are wrong");
        std::process::exit(1);
    }
    // SAFETY: a plain C function taking a count.
    let cxx = unsafe { cxx_check_saxpy(4096) };
    if cxx != 0 {
        eprintln!("cuda-saxpy: the C++ seam check failed (status {cxx})");
        std::process::exit(1);
    }
    println!(
        "OK: {n} floats (Rust through the bindings) and 4096 floats (C++ through the seam module)"
    );
}
