#include "plugins/cuda/elf_symbols.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace vigil::cuda {

std::string_view symbol_status_name(SymbolStatus s) {
  switch (s) {
    case SymbolStatus::kFound: return "found";
    case SymbolStatus::kAbsent: return "absent";
    case SymbolStatus::kUndefined: return "undefined";
    case SymbolStatus::kNotFunction: return "not a function";
    case SymbolStatus::kNotExecutable: return "not in an executable segment";
  }
  return "unknown";
}

namespace {

// [off, off+len) lies inside [0, size), without overflow.
bool in_file(std::uint64_t off, std::uint64_t len, std::uint64_t size) { return off <= size && len <= size - off; }

SymbolLookup fail(std::string why) {
  SymbolLookup r;
  r.error = std::move(why);
  return r;
}

template <class T>
bool read_table(const ReadAt& read, std::uint64_t file_size, std::uint64_t off, std::uint64_t count,
                std::vector<T>& out) {
  if (count > kMaxSymtabBytes / sizeof(T)) return false;
  std::uint64_t bytes = count * sizeof(T);
  if (!in_file(off, bytes, file_size)) return false;
  out.resize(static_cast<std::size_t>(count));
  return count == 0 || read(off, static_cast<std::size_t>(bytes), out.data());
}

}  // namespace

SymbolLookup lookup_symbols(const ReadAt& read, std::uint64_t file_size, std::span<const std::string_view> names) {
  Elf64_Ehdr eh;
  if (file_size < sizeof(eh) || !read(0, sizeof(eh), &eh)) return fail("too short for an ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return fail("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return fail("not a 64-bit ELF file");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return fail("not a little-endian ELF file");
  if (eh.e_type != ET_DYN && eh.e_type != ET_EXEC) return fail("not a shared object or executable");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_shentsize != sizeof(Elf64_Shdr))
    return fail("unexpected ELF header entry sizes");
  if (eh.e_phnum == 0 || eh.e_phnum > kMaxHeaders) return fail("no or too many program headers");
  if (eh.e_shnum == 0 || eh.e_shnum > kMaxHeaders)
    return fail("no or too many section headers (a stripped section table)");

  std::vector<Elf64_Phdr> ph;
  if (!read_table(read, file_size, eh.e_phoff, eh.e_phnum, ph)) return fail("program headers out of the file");
  std::vector<Elf64_Shdr> sh;
  if (!read_table(read, file_size, eh.e_shoff, eh.e_shnum, sh)) return fail("section headers out of the file");

  const Elf64_Shdr* dynsym = nullptr;
  const Elf64_Shdr* versym = nullptr;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type == SHT_DYNSYM && !dynsym) dynsym = &s;
    if (s.sh_type == SHT_GNU_versym && !versym) versym = &s;
  }
  if (!dynsym) return fail("no dynamic symbol table");
  if (dynsym->sh_entsize != sizeof(Elf64_Sym)) return fail("unexpected .dynsym entry size");
  if (dynsym->sh_link == 0 || dynsym->sh_link >= sh.size() || sh[dynsym->sh_link].sh_type != SHT_STRTAB)
    return fail(".dynsym has no string table");
  const Elf64_Shdr& strsh = sh[dynsym->sh_link];

  std::vector<Elf64_Sym> syms;
  if (!read_table(read, file_size, dynsym->sh_offset, dynsym->sh_size / sizeof(Elf64_Sym), syms))
    return fail(".dynsym out of the file or too large");
  std::vector<char> strtab;
  if (!read_table(read, file_size, strsh.sh_offset, strsh.sh_size, strtab))
    return fail(".dynstr out of the file or too large");
  std::vector<std::uint16_t> vers;
  if (versym && versym->sh_size / sizeof(std::uint16_t) == syms.size()) {
    if (!read_table(read, file_size, versym->sh_offset, syms.size(), vers)) vers.clear();
  }

  std::unordered_map<std::string_view, std::size_t> wanted;
  for (std::size_t i = 0; i < names.size(); ++i) wanted.emplace(names[i], i);

  SymbolLookup r;
  r.status.assign(names.size(), SymbolStatus::kAbsent);
  r.offset.assign(names.size(), 0);
  std::vector<bool> hidden_only(names.size(), false);  // kFound came from a non-default version

  for (std::size_t i = 1; i < syms.size(); ++i) {
    const Elf64_Sym& s = syms[i];
    if (s.st_name == 0 || s.st_name >= strtab.size()) continue;
    const char* p = strtab.data() + s.st_name;
    std::size_t n = strnlen(p, strtab.size() - s.st_name);
    if (n == strtab.size() - s.st_name) continue;  // not terminated inside the table
    auto it = wanted.find(std::string_view(p, n));
    if (it == wanted.end()) continue;
    std::size_t w = it->second;
    bool hidden = !vers.empty() && (vers[i] & 0x8000) != 0;
    // A default-version definition wins over a hidden (old-version) one; the
    // first of equals wins.
    if (r.status[w] == SymbolStatus::kFound && !(hidden_only[w] && !hidden)) continue;

    SymbolStatus st;
    std::uint64_t off = 0;
    if (s.st_shndx == SHN_UNDEF) {
      st = SymbolStatus::kUndefined;
    } else if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0) {
      st = SymbolStatus::kNotFunction;
    } else {
      st = SymbolStatus::kNotExecutable;
      for (const Elf64_Phdr& p : ph) {
        if (p.p_type != PT_LOAD || !(p.p_flags & PF_X)) continue;
        if (s.st_value < p.p_vaddr || s.st_value - p.p_vaddr >= p.p_filesz) continue;
        std::uint64_t o = s.st_value - p.p_vaddr + p.p_offset;
        if (o < p.p_offset || o >= file_size) continue;
        st = SymbolStatus::kFound;
        off = o;
        break;
      }
    }
    // Keep the most useful answer for a name seen more than once.
    if (st == SymbolStatus::kFound || r.status[w] == SymbolStatus::kAbsent) {
      r.status[w] = st;
      r.offset[w] = off;
      hidden_only[w] = hidden;
    }
  }
  return r;
}

SymbolLookup lookup_symbols_fd(int fd, std::span<const std::string_view> names) {
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  ReadAt read = [fd](std::uint64_t off, std::size_t len, void* dst) {
    auto* out = static_cast<char*>(dst);
    while (len > 0) {
      ssize_t n = pread(fd, out, len, static_cast<off_t>(off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      out += n;
      off += static_cast<std::uint64_t>(n);
      len -= static_cast<std::size_t>(n);
    }
    return true;
  };
  return lookup_symbols(read, static_cast<std::uint64_t>(st.st_size), names);
}

}  // namespace vigil::cuda
