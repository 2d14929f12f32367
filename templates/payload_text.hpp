// A text payload (PTX, any UTF-8 text), NUL-terminated.
struct text_payload {
    const char* text;          // e.g. cuModuleLoadData's image (PTX)
    unsigned long size_bytes;  // without the NUL
};
