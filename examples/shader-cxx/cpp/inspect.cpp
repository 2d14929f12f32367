// The same shader, read from C++ through the generated module.
import shader_cxx.shaders;

extern "C" unsigned long shader_cxx_size_from_cpp() {
    return shader_cxx::shaders::double_comp().size_bytes;
}

extern "C" unsigned int shader_cxx_magic_from_cpp() {
    return shader_cxx::shaders::double_comp().code[0];
}
