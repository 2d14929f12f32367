//! Added by `cargo mcpp init --lane spirv`: the SPIR-V of `shaders/double.comp`, compiled by
//! `cargo mcpp build` and embedded through the generated surface. Hand `code` to Vulkan
//! (`vk::ShaderModuleCreateInfo::code`, ash) to run it; this program checks and describes it.

mod shaders {
    include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
}

fn main() {
    let code: &[u32] = shaders::double_comp().code;
    if code.is_empty() {
        println!("double.comp: not compiled in this build (no accelerator: `cargo mcpp build --no-accel`)");
        return;
    }
    assert_eq!(code[0], 0x0723_0203, "SPIR-V starts with its magic number");
    println!("double.comp: {} words of SPIR-V {}.{}, accel `{}`", code.len(), (code[1] >> 16) & 0xff, (code[1] >> 8) & 0xff, env!("MCPP_BUILD_ACCEL"));
}
