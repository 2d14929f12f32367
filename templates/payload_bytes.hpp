// A payload of bytes (a cubin, a fatbin, any data), 16-byte aligned.
struct bytes_payload {
    const unsigned char* data;  // e.g. cuModuleLoadData's image
    unsigned long size_bytes;
};
