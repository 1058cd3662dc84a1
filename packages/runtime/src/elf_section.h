// Reads one named section of an ELF64 file from its section headers, without
// loading the file as code (the artifact loader checks metadata before dlopen).
#pragma once

#include <cstdint>
#include <string>

namespace hipdnn_ep {

// Reads section `name` of the ELF64 little-endian file at path into *out.
// Returns a status; the error names the file and what was wrong.
int32_t read_elf_section(const std::string& path, const std::string& name, std::string* out);

}  // namespace hipdnn_ep
