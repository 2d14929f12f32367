//! One shader, two readers: the Rust surface and a C++ unit importing `shader_cxx.shaders`.

mod shaders {
    include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
}

extern "C" {
    fn shader_cxx_size_from_cpp() -> core::ffi::c_ulong;
    fn shader_cxx_magic_from_cpp() -> core::ffi::c_uint;
}

fn main() {
    let p = shaders::double_comp();
    // SAFETY: the C++ accessors take nothing and return the payload's size and first word.
    let (size, magic) = unsafe { (shader_cxx_size_from_cpp(), shader_cxx_magic_from_cpp()) };
    println!(
        "{}: {} bytes from Rust, {size} bytes from C++, magic {magic:#010x}",
        p.source, p.size_bytes
    );
    assert_eq!(
        (p.size_bytes as u64, p.code[0]),
        (size as u64, magic),
        "Rust and C++ read the same bytes"
    );
}
