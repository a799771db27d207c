#include "plugins/cuda/probes.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "bpf/vigil_cuda.skel.h"
#include "plugins/cuda/calls.h"

namespace vigil::cuda {

namespace {

// Multi-uprobe links (Linux 6.6) by the bpf() system call: the libbpf this
// builds against (1.1) predates them. Values from the kernel's uapi bpf.h.
constexpr int kBpfLinkCreate = 28;                // BPF_LINK_CREATE
constexpr unsigned kAttachTraceUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI

struct LinkCreateUprobeMulti {  // union bpf_attr, link_create.uprobe_multi
  std::uint32_t prog_fd;
  std::uint32_t target_fd;
  std::uint32_t attach_type;
  std::uint32_t flags;
  std::uint64_t path;
  std::uint64_t offsets;
  std::uint64_t ref_ctr_offsets;
  std::uint64_t cookies;
  std::uint32_t cnt;
  std::uint32_t multi_flags;
  std::uint32_t pid;
  std::uint32_t pad;
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

int uprobe_multi_link(int prog_fd, const std::string& path, const std::vector<std::uint64_t>& offsets,
                      const std::vector<std::uint64_t>& cookies) {
  LinkCreateUprobeMulti a{};
  a.prog_fd = static_cast<std::uint32_t>(prog_fd);
  a.attach_type = kAttachTraceUprobeMulti;
  a.path = reinterpret_cast<std::uintptr_t>(path.c_str());
  a.offsets = reinterpret_cast<std::uintptr_t>(offsets.data());
  a.cookies = reinterpret_cast<std::uintptr_t>(cookies.data());
  a.cnt = static_cast<std::uint32_t>(offsets.size());
  long fd = syscall(__NR_bpf, kBpfLinkCreate, &a, sizeof(a));
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::uint32_t round_up_pow2(std::uint32_t v) {
  std::uint32_t p = 4096;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}

}  // namespace

struct Probes::Impl {
  vigil_cuda* skel = nullptr;
  ring_buffer* rb = nullptr;
  std::vector<bpf_link*> links;
  std::vector<int> multi_links;  // multi-uprobe link fds
  bpf_link* mmap_link = nullptr;
  std::string watch_error;
  std::function<void(std::uint32_t)> on_mmap;
  bool multi = false;  // the kernel took the multi-uprobe programs
  int ncpu = 1;
  const std::function<void(const cuda_call_rec&)>* on_record = nullptr;

  ~Impl() {
    if (mmap_link) bpf_link__destroy(mmap_link);
    for (bpf_link* l : links) bpf_link__destroy(l);
    for (int fd : multi_links) close(fd);
    if (rb) ring_buffer__free(rb);
    if (skel) vigil_cuda__destroy(skel);
  }

  static int on_mmap_sample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    if (size < sizeof(cuda_mmap_rec) || !self->on_mmap) return 0;
    cuda_mmap_rec r;
    std::memcpy(&r, data, sizeof(r));
    self->on_mmap(r.pid);
    return 0;
  }

  static int on_sample(void* ctx, void* data, size_t size) {
    auto* self = static_cast<Impl*>(ctx);
    if (size < sizeof(cuda_call_rec) || !self->on_record) return 0;
    cuda_call_rec r;
    std::memcpy(&r, data, sizeof(r));
    (*self->on_record)(r);
    return 0;
  }
};

Probes::Probes(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Probes::~Probes() = default;

std::unique_ptr<Probes> Probes::load(const ProbeOptions& opt, std::string& err) {
  auto impl = std::make_unique<Impl>();
  impl->ncpu = libbpf_num_possible_cpus();
  if (impl->ncpu <= 0) {
    err = "cannot count the possible CPUs";
    return nullptr;
  }
  // The optional programs first; a kernel that refuses one loads the object
  // again without it: multi-uprobe links (6.6), the mmap watch (bpf_find_vma, 5.17).
  bool want_watch = !opt.watch_names.empty();
  std::vector<std::pair<bool, bool>> tries;
  for (bool multi : {opt.multi_uprobe, false})
    for (bool watch : {want_watch, false})
      if (std::find(tries.begin(), tries.end(), std::pair{multi, watch}) == tries.end())
        tries.push_back({multi, watch});
  int last_err = 0;
  for (auto [multi, watch] : tries) {
    impl->skel = vigil_cuda__open();
    if (!impl->skel) {
      err = std::string("cannot open the CUDA probe BPF object: ") + std::strerror(errno);
      return nullptr;
    }
    if (int e = bpf_map__set_max_entries(impl->skel->maps.cuda_events, round_up_pow2(opt.ringbuf_bytes)); e) {
      err = std::string("ring buffer size: ") + std::strerror(-e);
      return nullptr;
    }
    if (int e = bpf_map__set_max_entries(impl->skel->maps.cuda_launches, opt.max_processes); e) {
      err = std::string("launch map size: ") + std::strerror(-e);
      return nullptr;
    }
    std::uint32_t ring = round_up_pow2(opt.ringbuf_bytes);
    impl->skel->rodata->cfg_wakeup_bytes = opt.batch_wakeups ? ring / 4 : 0;
    std::uint32_t n = 0;
    for (const std::string& name : opt.watch_names) {
      if (n >= CUDA_WATCH_NAMES || name.empty() || name.size() >= CUDA_WATCH_NAME_LEN) continue;
      std::memcpy(const_cast<char*>(impl->skel->rodata->cfg_names[n]), name.data(), name.size());
      impl->skel->rodata->cfg_name_len[n] = static_cast<std::uint32_t>(name.size());
      ++n;
    }
    impl->skel->rodata->cfg_n_names = n;
    for (bpf_program* p : {impl->skel->progs.cuda_launch_multi, impl->skel->progs.cuda_call_multi}) {
      if (multi) bpf_program__set_expected_attach_type(p, static_cast<bpf_attach_type>(kAttachTraceUprobeMulti));
      else bpf_program__set_autoload(p, false);
    }
    if (!watch || n == 0) bpf_program__set_autoload(impl->skel->progs.cuda_mmap_exit, false);
    last_err = vigil_cuda__load(impl->skel);
    if (last_err == 0) {
      impl->multi = multi;
      if (watch && n > 0) {
        impl->mmap_link = bpf_program__attach(impl->skel->progs.cuda_mmap_exit);
        if (!impl->mmap_link)
          impl->watch_error = std::string("cannot attach syscalls:sys_exit_mmap: ") + std::strerror(errno);
      } else if (want_watch) {
        impl->watch_error = n == 0 ? "no library name short enough to compare in the kernel"
                                   : "this kernel refused the mmap watch program (bpf_find_vma needs Linux 5.17)";
      }
      break;
    }
    vigil_cuda__destroy(impl->skel);
    impl->skel = nullptr;
  }
  if (!impl->skel) {
    err = std::string("cannot load the CUDA probe BPF programs: ") + std::strerror(-last_err) +
          " (root or CAP_BPF+CAP_PERFMON needed)";
    return nullptr;
  }
  impl->rb = ring_buffer__new(bpf_map__fd(impl->skel->maps.cuda_events), &Impl::on_sample, impl.get(), nullptr);
  if (!impl->rb) {
    err = std::string("cannot set up the ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  if (impl->mmap_link &&
      ring_buffer__add(impl->rb, bpf_map__fd(impl->skel->maps.cuda_mmaps), &Impl::on_mmap_sample, impl.get()) != 0) {
    impl->watch_error = std::string("cannot read the mmap watch ring: ") + std::strerror(errno);
    bpf_link__destroy(impl->mmap_link);
    impl->mmap_link = nullptr;
  }
  return std::unique_ptr<Probes>(new Probes(std::move(impl)));
}

AttachResult Probes::attach(int fd, std::uint32_t slot, const std::vector<std::uint32_t>& calls) {
  AttachResult res;
  std::vector<CallInfo> infos;
  std::vector<std::string_view> names;
  for (std::uint32_t id : calls) {
    if (auto c = call_by_id(id)) {
      infos.push_back(*c);
      names.push_back(c->symbol);
    }
  }
  SymbolLookup found = lookup_symbols_fd(fd, names);
  if (!found.error.empty()) {
    res.error = found.error;
    return res;
  }
  // The kernel resolves this path to the very file the plugin opened and
  // checked, however the process's view of it changes afterwards.
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::map<std::uint64_t, std::string_view> at_offset;
  struct Site {
    std::string name;
    std::uint64_t offset;
    std::uint64_t cookie;
  };
  std::vector<Site> sites[2];  // [0] kernel launches, [1] other calls
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const CallInfo& c = infos[i];
    std::string name(c.symbol);
    if (found.status[i] != SymbolStatus::kFound) {
      res.missing.push_back(name + " (" + std::string(symbol_status_name(found.status[i])) + ")");
      continue;
    }
    // Two names for one address would make one call fire both probes.
    if (auto it = at_offset.find(found.offset[i]); it != at_offset.end()) {
      res.missing.push_back(name + " (alias of " + std::string(it->second) + ")");
      continue;
    }
    at_offset.emplace(found.offset[i], c.symbol);
    sites[c.category == Category::kLaunch ? 0 : 1].push_back({name, found.offset[i], CUDA_COOKIE(c.id, slot)});
  }
  for (int k = 0; k < 2; ++k) {
    if (sites[k].empty()) continue;
    if (impl_->multi) {
      std::vector<std::uint64_t> offsets, cookies;
      for (const Site& st : sites[k]) {
        offsets.push_back(st.offset);
        cookies.push_back(st.cookie);
      }
      bpf_program* prog = k == 0 ? impl_->skel->progs.cuda_launch_multi : impl_->skel->progs.cuda_call_multi;
      int fd = uprobe_multi_link(bpf_program__fd(prog), path, offsets, cookies);
      if (fd >= 0) {
        impl_->multi_links.push_back(fd);
        for (const Site& st : sites[k]) res.attached.push_back(st.name);
        continue;
      }
      // Refused (a kernel without multi-uprobe links): one link per entry point.
    }
    bpf_program* prog = k == 0 ? impl_->skel->progs.cuda_launch : impl_->skel->progs.cuda_call;
    for (const Site& st : sites[k]) {
      LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = st.cookie, .retprobe = false);
      bpf_link* link =
          bpf_program__attach_uprobe_opts(prog, -1, path.c_str(), static_cast<std::size_t>(st.offset), &uo);
      if (!link) {
        res.missing.push_back(st.name + " (attach: " + std::strerror(errno) + ")");
        continue;
      }
      impl_->links.push_back(link);
      res.attached.push_back(st.name);
    }
  }
  return res;
}

void Probes::on_mmap(std::function<void(std::uint32_t)> fn) { impl_->on_mmap = std::move(fn); }
bool Probes::watching_mmaps() const { return impl_->mmap_link != nullptr; }
const std::string& Probes::watch_error() const { return impl_->watch_error; }

int Probes::poll(int timeout_ms, const std::function<void(const cuda_call_rec&)>& on_record) {
  impl_->on_record = &on_record;
  int n = ring_buffer__poll(impl_->rb, timeout_ms);
  impl_->on_record = nullptr;
  return n == -EINTR ? 0 : n;
}

int Probes::consume(const std::function<void(const cuda_call_rec&)>& on_record) {
  impl_->on_record = &on_record;
  int n = ring_buffer__consume(impl_->rb);
  impl_->on_record = nullptr;
  return n;
}

std::vector<LaunchCount> Probes::launch_counts(std::size_t max) {
  std::vector<LaunchCount> out;
  int fd = bpf_map__fd(impl_->skel->maps.cuda_launches);
  std::vector<cuda_launch_val> vals(static_cast<std::size_t>(impl_->ncpu));
  cuda_launch_key key{}, next{};
  const cuda_launch_key* prev = nullptr;
  while (out.size() < max && bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(fd, &key, vals.data()) != 0) continue;  // deleted meanwhile
    LaunchCount c{key.pid, key.lib, 0, 0};
    for (const cuda_launch_val& v : vals) {
      c.total += v.count;
      c.graphs += v.graphs;
    }
    out.push_back(c);
  }
  return out;
}

LaunchCount Probes::launch_total(std::uint32_t pid, std::uint32_t lib) {
  std::vector<cuda_launch_val> vals(static_cast<std::size_t>(impl_->ncpu));
  cuda_launch_key key{pid, lib};
  LaunchCount c{pid, lib, 0, 0};
  if (bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.cuda_launches), &key, vals.data()) != 0) return c;
  for (const cuda_launch_val& v : vals) {
    c.total += v.count;
    c.graphs += v.graphs;
  }
  return c;
}

void Probes::forget(std::uint32_t pid, std::uint32_t lib) {
  cuda_launch_key key{pid, lib};
  bpf_map_delete_elem(bpf_map__fd(impl_->skel->maps.cuda_launches), &key);
}

std::uint64_t Probes::drops(std::uint32_t reason) {
  std::vector<std::uint64_t> vals(static_cast<std::size_t>(impl_->ncpu));
  if (bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.cuda_drops), &reason, vals.data()) != 0) return 0;
  std::uint64_t total = 0;
  for (std::uint64_t v : vals) total += v;
  return total;
}

std::size_t Probes::links() const { return impl_->links.size() + impl_->multi_links.size(); }

bool Probes::multi() const { return impl_->multi; }

}  // namespace vigil::cuda
