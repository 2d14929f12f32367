//! Added by `cargo mcpp init --lane __LANE__`: calls the island's entry point `scale_run`, the
//! __DEVICE__ kernel of `__SOURCE__` or, in a build without an accelerator (`__FALLBACK__`), its
//! CPU fallback `host/scale.cpp`, through the generated Rust bindings (bindgen, the marked entry
//! points only).

#[allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/mcpp_kernels.rs"));
}

fn main() {
    let mut y: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    // SAFETY: `y` holds `y.len()` floats and outlives the call.
    let status = unsafe { kernels::scale_run(y.as_mut_ptr(), y.len() as u32) };
    match status {
        0 => {}
        1 => {
            eprintln!("no __DEVICE__ device is present: for the CPU fallback, run `__FALLBACK__`");
            std::process::exit(2);
        }
        s => {
            eprintln!("the kernel failed (status {s})");
            std::process::exit(3);
        }
    }
    let accel = match env!("MCPP_BUILD_ACCEL") {
        "" => "none: the CPU fallback",
        set => set,
    };
    assert!(y.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32), "every element doubled");
    println!("scale_run doubled {} floats (accel {accel}); y[100] = {}", y.len(), y[100]);
}
