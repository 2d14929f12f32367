// The payload, as the device API wants it. Free of standard-library
// types on purpose: importing this module costs a few kilobytes of BMI,
// not the megabyte a <span> would.
struct payload {
    const unsigned int* code;  // e.g. VkShaderModuleCreateInfo::pCode
    unsigned long size_bytes;  // e.g. VkShaderModuleCreateInfo::codeSize
};
