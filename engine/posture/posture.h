// The node's GPU security posture: what vigil reads from the host's files
// about the NVIDIA stack, without running anything. The host's files are
// under a host-root prefix (vigil runs in a container with the host's
// directories mounted; tests use a directory), the kernel's (proc/, sys/)
// under a kernel root of their own, every read is bounded, every byte is
// untrusted, and a missing or unreadable file means "not known", never an
// error.
//
//   posture::ReadOptions o;  o.host_root = "/host";
//   posture::Posture p = posture::read_posture(o);
//   log.info("posture: {}", posture::summary(p));
//
// What is read (docs/posture.md):
//   driver version   <kernel>/proc/driver/nvidia/version, else <kernel>/sys/module/nvidia/version
//   profiling        <kernel>/proc/driver/nvidia/params (RmProfilingAdminOnly)
//   toolkit version  <root>/var/lib/dpkg/status (nvidia-container-toolkit[-base])
//   toolkit settings <root>/etc/nvidia-container-runtime/config.toml
//   runtime          the toolkit's `runtimes` list, the first installed in the host's bin directories
//
// Thread-safety: pure functions over the file system; call from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/event.h"
#include "engine/posture/bulletins.h"
#include "engine/posture/ecc.h"

namespace vigil::posture {

// 1 yes, 0 no, -1 not known.
using Tri = std::int32_t;

struct Posture {
  std::string driver_version;   // "" not known
  std::string toolkit_version;  // "" not known
  std::vector<Finding> vulnerable;
  Tri profiling_admin_only = -1;
  Tri accept_envvar = -1;     // accept-nvidia-visible-devices-envvar-when-unprivileged
  Tri cuda_compat_hook = -1;  // the enable-cuda-compat hook runs
  std::string runtime;        // "runc", "crun", ...; "" not known
  // The GPUs' ECC, from the nvml plugin's samples (ecc.h; never read from a
  // file): ecc_summary(ecc_gpus), "" not known.
  std::string ecc;
  std::vector<GpuEcc> ecc_gpus;  // by index; empty: not known

  bool operator==(const Posture& o) const;
};

struct ReadOptions {
  std::string host_root = "/";
  // Where proc/ and sys/ are read; "" (the default): under host_root. The
  // driver's /proc entries and /sys/module are the kernel's, the same in
  // every mount namespace, so a container reads them at its own "/" while
  // the host's files are mounted under host_root (deploy/daemonset.yaml).
  std::string kernel_root;
  std::size_t max_file_bytes = 1 << 16;          // /proc files, config.toml
  std::size_t max_package_db_bytes = 64u << 20;  // /var/lib/dpkg/status
};

// The files' facts; ECC is left unknown (set_ecc adds it).
Posture read_posture(const ReadOptions& opt);

// What read_posture reads, relative to its root: under host_root the package
// database, the toolkit's configuration files (the first that exists) and
// the bin directories where the runtime is looked for; under the kernel root
// the driver's files. A container's mounts must cover host_paths()
// (deploy/daemonset.yaml; tests/deploy checks them).
std::span<const std::string_view> host_paths();
std::span<const std::string_view> kernel_paths();

// Sets the posture's ECC to one whole sample of the nvml plugin (empty: not
// known).
void set_ecc(Posture& p, std::vector<GpuEcc> gpus);

// The parsers, one per file, over its bytes (tests feed them hostile input).
// Each returns "" / -1 when the text does not say.
std::string parse_driver_version(std::string_view proc_version);  // "NVRM version: ... Kernel Module  580.95.05 ..."
std::string parse_module_version(std::string_view sys_version);   // "580.95.05\n"
Tri parse_profiling_admin_only(std::string_view params);          // "RmProfilingAdminOnly: 1"

// The keys of the toolkit's config.toml vigil reads: a bounded reading of
// TOML's `[table]` headers and `key = value` lines (booleans, strings,
// arrays of strings on one line); anything else is skipped.
struct ToolkitConfig {
  Tri accept_envvar = -1;
  Tri disable_cuda_compat_hook = -1;  // features.disable-cuda-compat-lib-hook
  std::vector<std::string> runtimes;  // nvidia-container-runtime.runtimes
};
ToolkitConfig parse_toolkit_config(std::string_view toml);

// The version of the first installed package named in `packages` (in that
// order of preference) in a dpkg status file, without its epoch and Debian
// revision ("1.17.8-1" -> "1.17.8"). Called line by line.
class DpkgStatusReader {
 public:
  explicit DpkgStatusReader(std::vector<std::string> packages);
  void line(std::string_view l);
  std::string version() const;  // call after the last line

 private:
  void end_stanza();
  std::vector<std::string> packages_;
  std::vector<std::string> found_;  // by index in packages_
  std::string package_, version_;
  bool installed_ = false;
};

// "driver", "toolkit", "vulnerable", "profiling", "accept_envvar",
// "cuda_compat", "runtime", "ecc": the facts that differ, space-separated.
std::string changed_facts(const Posture& before, const Posture& now);
// Every fact's name, space-separated (the first report).
std::string all_facts();

// "CVE-2025-23266,CVE-2025-23267": the findings' CVEs, comma-separated.
std::string cve_list(const std::vector<Finding>& v);

// The ready line's part: "driver 580.95.05, toolkit 1.17.7 (CVE-2025-23266,
// CVE-2025-23267), profiling admin-only, envvar accepted from unprivileged,
// cuda-compat hook on, runtime runc, ECC on (2 GPUs)" (ECC: ecc_summary_text).
std::string summary(const Posture& p);

// The node's posture as an event payload (kind "node").
event::PostureData to_event(const Posture& p, std::string changed);

}  // namespace vigil::posture
