// The literal paths open rules compare their path fields with, gathered for
// the sensor's in-kernel open filter (docs/events.md, "open").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vigil::rules {

// A literal path an open rule compares a path field with, for the sensor's
// open filter: a prefix of the path, or (whole) the entire resolved path of a
// successful open (fd.name = / in). A prefix of fd.name or fd.directory is
// one of the resolved path; `given` marks one of the path as the process
// gave it (fd.nameraw, evt.arg.path, evt.arg.name), which the kernel must
// judge by the given string, not by the file it opened.
// `write`: only an open for writing (evt.is_open_write) can match it, so the
// kernel need not judge the others by it. `dir`: the path is the whole
// directory of the resolved path (fd.directory = / in), judged by the name of
// the opened file's parent. `contains`: a fragment of a file name (fd.name
// contains "id_rsa", no '/'), usable only beside a traversal. `traversal`:
// the literal holds only where the path as given holds "../" (a rule that
// also needs Falco's directory_traversal); on the given literal "../" it
// marks that need itself.
struct PathLiteral {
  std::string path;
  bool whole = false;
  bool given = false;
  bool write = false;
  bool dir = false;
  bool contains = false;
  bool traversal = false;
  auto operator<=>(const PathLiteral&) const = default;
};

// The literal paths of a rule set (or a filter) for the sensor's open filter,
// sorted, each once, without those another covers: a prefix covers the
// longer prefixes of its kind and, when it is of the resolved path, the whole
// paths it starts. The rules still judge the exact path.
struct OpenPaths {
  std::vector<std::string> prefixes;        // of the resolved path (of a successful open)
  std::vector<std::string> write_prefixes;  // the same, for opens for writing only
  std::vector<std::string> given;           // of the path as given
  std::vector<std::string> whole;           // whole resolved paths
  std::vector<std::string> directories;     // whole directories of resolved paths
  // Judged only where the path as given holds "../" (the kernel reads it
  // for these alone): prefixes of the resolved path, and fragments of the
  // opened file's name.
  std::vector<std::string> traversal_prefixes;
  std::vector<std::string> traversal_fragments;
  std::size_t size() const {
    return prefixes.size() + write_prefixes.size() + given.size() + whole.size() + directories.size() +
           traversal_prefixes.size() + traversal_fragments.size();
  }
  bool operator==(const OpenPaths&) const = default;
  // One line for `vigil rules validate`: each kind that has paths, named.
  std::string describe() const {
    std::string out;
    auto add = [&out](const char* kind, const std::vector<std::string>& paths) {
      if (paths.empty()) return;
      out += out.empty() ? "" : "; ";
      out += kind;
      out += ": ";
      for (std::size_t i = 0; i < paths.size(); ++i) out += (i ? ", " : "") + paths[i];
    };
    add("prefixes of the resolved path", prefixes);
    add(prefixes.empty() ? "prefixes of the resolved path, for opens for writing only"
                         : "the same, for opens for writing only",
        write_prefixes);
    add("prefixes of the path as given", given);
    add("whole paths", whole);
    add("directories", directories);
    add("where the path as given holds \"../\", prefixes of the resolved path", traversal_prefixes);
    add("where the path as given holds \"../\", file names holding", traversal_fragments);
    return out;
  }
};
OpenPaths open_paths_of(std::vector<PathLiteral> literals);

}  // namespace vigil::rules
