#include "elf_section.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "runtime_internal.h"

namespace hipdnn_ep {
namespace {

constexpr uint64_t kMaxSectionBytes = 64u << 20;  // metadata is small; refuse absurd sizes

bool read_at(std::ifstream& file, uint64_t offset, void* dst, uint64_t size) {
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(static_cast<char*>(dst), static_cast<std::streamsize>(size));
  return static_cast<uint64_t>(file.gcount()) == size;
}

}  // namespace

int32_t read_elf_section(const std::string& path, const std::string& name, std::string* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return set_error(HIPDNN_EP_STATUS_NOT_FOUND, "cannot open " + path);
  auto bad = [&](const std::string& why) {
    return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT, path + " is not a readable ELF64 shared object: " + why);
  };
  file.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(file.tellg());
  auto in_file = [&](uint64_t offset, uint64_t size) { return offset <= file_size && size <= file_size - offset; };

  Elf64_Ehdr eh;
  if (!read_at(file, 0, &eh, sizeof eh)) return bad("file too short");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not ELF64 little-endian");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum) {
    return bad("no usable section header table");
  }
  if (!in_file(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) return bad("section headers out of range");
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!read_at(file, eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) {
    return bad("truncated section headers");
  }
  const Elf64_Shdr& strtab = sections[eh.e_shstrndx];
  if (!in_file(strtab.sh_offset, strtab.sh_size) || strtab.sh_size > kMaxSectionBytes) {
    return bad("section name table out of range");
  }
  std::string names(strtab.sh_size, '\0');
  if (!read_at(file, strtab.sh_offset, names.data(), names.size())) return bad("truncated section name table");

  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_name >= names.size() || std::strcmp(names.c_str() + sh.sh_name, name.c_str()) != 0) continue;
    if (sh.sh_type == SHT_NOBITS || !in_file(sh.sh_offset, sh.sh_size) || sh.sh_size > kMaxSectionBytes) {
      return bad("section " + name + " has no readable contents");
    }
    std::string data(sh.sh_size, '\0');
    if (!read_at(file, sh.sh_offset, data.data(), data.size())) return bad("truncated section " + name);
    data.resize(std::strlen(data.c_str()));  // the content is NUL-terminated
    *out = std::move(data);
    return HIPDNN_EP_STATUS_OK;
  }
  return set_error(HIPDNN_EP_STATUS_INVALID_ARGUMENT,
                   path + " has no " + name + " section: it is not a hipdnn-ep artifact");
}

}  // namespace hipdnn_ep
