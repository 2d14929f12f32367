// The image a selection function chose: kind 1 a cubin, 2 PTX (NUL-terminated), 3 a fat
// binary, 0 none fits (data null, size 0); arch the architecture it is built for.
struct cuda_image {
    int kind;
    const char* arch;
    const unsigned char* data;  // e.g. cuModuleLoadData's image
    unsigned long size_bytes;
};
