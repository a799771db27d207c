#include "tests/e2e/containerd.h"

#include <elf.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/rpc/proto/cri/api.grpc.pb.h"

#ifndef VIGIL_SOURCE_ROOT
#error "VIGIL_SOURCE_ROOT: the repository root, for tests/e2e/cri_image.py"
#endif

namespace vigil::e2e {

namespace rt = ::runtime::v1;

namespace {

constexpr const char* kContainerd = "/usr/bin/containerd";
constexpr const char* kCtr = "/usr/bin/ctr";
constexpr const char* kBusybox = "/bin/busybox";
constexpr const char* kPauseImage = "vigil.local/pause:1";
constexpr const char* kAppImage = "vigil.local/app:1";

// True when `path` is an ELF executable without an interpreter (static):
// the images have no C library.
bool static_elf(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh{};
  bool ok = ::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
            std::equal(eh.e_ident, eh.e_ident + SELFMAG, ELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
            eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 64;
  for (int i = 0; ok && i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    if (::pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) != static_cast<ssize_t>(sizeof ph))
      ok = false;
    else if (ph.p_type == PT_INTERP) ok = false;
  }
  ::close(fd);
  return ok;
}

// Starts argv[0] with argv, its stdout and stderr appended to `log`.
support::Child spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
  return support::Child::run([&] {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    return 127;
  });
}

int run_quietly(const std::vector<std::string>& argv, const std::string& log) {
  const int st = spawn_logged(argv, log).wait(std::chrono::seconds(60));
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string config_toml(const std::string& dir, const std::string& socket) {
  std::ostringstream o;
  o << "version = 2\n"
    << "root = \"" << dir << "/root\"\n"
    << "state = \"" << dir << "/state\"\n"
    << "disabled_plugins = [\"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.zfs\", "
       "\"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.snapshotter.v1.aufs\", "
       "\"io.containerd.internal.v1.opt\", \"io.containerd.tracing.processor.v1.otlp\"]\n"
    << "[grpc]\n  address = \"" << socket << "\"\n"
    << "[ttrpc]\n  address = \"" << socket << ".ttrpc\"\n"
    << "[debug]\n  address = \"\"\n  level = \"warn\"\n"
    << "[metrics]\n  address = \"\"\n"
    << "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
    << "  sandbox_image = \"" << kPauseImage << "\"\n"
    << "  disable_apparmor = true\n"
    << "  restrict_oom_score_adj = true\n"
    << "  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
    << "    snapshotter = \"overlayfs\"\n"
    << "    default_runtime_name = \"runc\"\n"
    << "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
    << "      runtime_type = \"io.containerd.runc.v2\"\n"
    << "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
    << "        SystemdCgroup = false\n"
    << "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
    << "    bin_dir = \"" << dir << "/cni-bin\"\n"
    << "    conf_dir = \"" << dir << "/cni-conf\"\n";
  return o.str();
}

// This process's mount points, each with whether it is a cgroup hierarchy
// (v1 or v2), from /proc/self/mountinfo.
std::vector<std::pair<std::string, bool>> mounts() {
  std::vector<std::pair<std::string, bool>> out;
  std::ifstream mi("/proc/self/mountinfo");
  for (std::string line; std::getline(mi, line);) {
    std::istringstream in(line);
    std::string id, parent, devno, root, mnt;
    in >> id >> parent >> devno >> root >> mnt;
    out.emplace_back(mnt, line.find(" - cgroup") != std::string::npos);
  }
  return out;
}

// The labels the kubelet puts on a pod's sandbox and containers.
void kubelet_labels(google::protobuf::Map<std::string, std::string>& l, const Containerd::Pod& p) {
  l["io.kubernetes.pod.name"] = p.name;
  l["io.kubernetes.pod.namespace"] = p.ns;
  l["io.kubernetes.pod.uid"] = p.uid;
}

void with_deadline(grpc::ClientContext& ctx, int seconds) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

}  // namespace

struct Containerd::Impl {
  std::unique_ptr<rt::RuntimeService::Stub> stub;  // thread-safe
  std::mutex mu;
  std::map<std::string, rt::PodSandboxConfig> configs;  // by sandbox id; guarded by mu
};

Containerd::Containerd() : impl_(std::make_unique<Impl>()) {}

std::string Containerd::start(const std::string& dir) {
  if (::access(kContainerd, X_OK) != 0 || ::access(kCtr, X_OK) != 0)
    return "containerd is not installed (Debian package containerd)";
  if (!static_elf(kBusybox)) return "no static busybox at /bin/busybox (Debian package busybox-static)";
  if (::access("/usr/bin/python3", X_OK) != 0) return "no python3 to build the images";
  dir_ = dir;
  socket_ = dir + "/containerd.sock";
  {
    std::ofstream f(dir + "/config.toml");
    f << config_toml(dir, socket_);
  }
  const std::string log = dir + "/containerd.log";
  daemon_ = spawn_logged({kContainerd, "--config", dir + "/config.toml"}, log);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  impl_->stub = rt::RuntimeService::NewStub(
      grpc::CreateCustomChannel("unix:" + socket_, grpc::InsecureChannelCredentials(), args));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool up = false;
  while (!up && std::chrono::steady_clock::now() < deadline) {
    grpc::ClientContext ctx;
    with_deadline(ctx, 2);
    rt::VersionRequest req;
    rt::VersionResponse resp;
    up = impl_->stub->Version(&ctx, req, &resp).ok();
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!up) return "containerd did not answer CRI Version within 30 s (see " + log + ")";
  const std::string script = std::string(VIGIL_SOURCE_ROOT) + "/tests/e2e/cri_image.py";
  struct Image {
    const char* ref;
    const char* file;
    std::vector<std::string> cmd;
  } images[] = {{kPauseImage, "pause.tar", {"/bin/sleep", "1000000"}}, {kAppImage, "app.tar", {}}};
  for (const Image& im : images) {
    std::vector<std::string> build = {"/usr/bin/python3", script, dir + "/" + im.file, im.ref, kBusybox};
    build.insert(build.end(), im.cmd.begin(), im.cmd.end());
    if (run_quietly(build, log) != 0) return std::string("cannot build the image ") + im.ref + " (see " + log + ")";
    if (run_quietly({kCtr, "-a", socket_, "-n", "k8s.io", "images", "import", dir + "/" + im.file}, log) != 0)
      return std::string("ctr could not import ") + im.ref + " (see " + log + ")";
  }
  return "";
}

std::optional<Containerd::Pod> Containerd::run_pod(const std::string& name, const std::string& ns,
                                                   const std::string& uid) {
  Pod p{"", uid, name, ns};
  rt::PodSandboxConfig cfg;
  cfg.mutable_metadata()->set_name(name);
  cfg.mutable_metadata()->set_namespace_(ns);
  cfg.mutable_metadata()->set_uid(uid);
  cfg.set_log_directory(dir_ + "/logs/" + uid);
  kubelet_labels(*cfg.mutable_labels(), p);
  (*cfg.mutable_labels())["app"] = "infer";
  (*cfg.mutable_annotations())["kubernetes.io/config.source"] = "api";
  auto* linux = cfg.mutable_linux();
  // The kubelet's cgroupfs driver: /kubepods/besteffort/pod<uid>.
  linux->set_cgroup_parent("/kubepods/besteffort/pod" + uid);
  linux->mutable_security_context()->mutable_namespace_options()->set_network(rt::NODE);
  rt::RunPodSandboxRequest req;
  *req.mutable_config() = cfg;
  rt::RunPodSandboxResponse resp;
  grpc::ClientContext ctx;
  with_deadline(ctx, 30);
  grpc::Status st = impl_->stub->RunPodSandbox(&ctx, req, &resp);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lk(impl_->mu);
    error_ = "RunPodSandbox: " + st.error_message();
    return std::nullopt;
  }
  p.sandbox_id = resp.pod_sandbox_id();
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->configs[p.sandbox_id] = cfg;
  pods_.push_back(p);
  return p;
}

std::string Containerd::start_container(const Pod& pod, const std::string& name,
                                        const std::vector<std::string>& command) {
  rt::CreateContainerRequest req;
  req.set_pod_sandbox_id(pod.sandbox_id);
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    *req.mutable_sandbox_config() = impl_->configs[pod.sandbox_id];
  }
  auto* c = req.mutable_config();
  c->mutable_metadata()->set_name(name);
  c->mutable_image()->set_image(kAppImage);
  for (const auto& a : command) c->add_command(a);
  c->set_log_path(name + ".log");
  kubelet_labels(*c->mutable_labels(), pod);
  (*c->mutable_labels())["io.kubernetes.container.name"] = name;
  c->mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(rt::NODE);
  rt::CreateContainerResponse created;
  {
    grpc::ClientContext ctx;
    with_deadline(ctx, 30);
    grpc::Status st = impl_->stub->CreateContainer(&ctx, req, &created);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lk(impl_->mu);
      error_ = "CreateContainer: " + st.error_message();
      return "";
    }
  }
  rt::StartContainerRequest start;
  start.set_container_id(created.container_id());
  rt::StartContainerResponse started;
  grpc::ClientContext ctx;
  with_deadline(ctx, 30);
  grpc::Status st = impl_->stub->StartContainer(&ctx, start, &started);
  if (!st.ok()) {
    std::lock_guard<std::mutex> lk(impl_->mu);
    error_ = "StartContainer: " + st.error_message();
    return "";
  }
  return created.container_id();
}

std::string Containerd::last_error() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return error_;
}

bool Containerd::remove_pod(const Pod& pod) {
  bool ok = true;
  {
    rt::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(pod.sandbox_id);
    rt::StopPodSandboxResponse resp;
    grpc::ClientContext ctx;
    with_deadline(ctx, 30);
    ok = impl_->stub->StopPodSandbox(&ctx, req, &resp).ok() && ok;
  }
  rt::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(pod.sandbox_id);
  rt::RemovePodSandboxResponse resp;
  grpc::ClientContext ctx;
  with_deadline(ctx, 30);
  ok = impl_->stub->RemovePodSandbox(&ctx, req, &resp).ok() && ok;
  // The pod's cgroup parent, as the kubelet removes it (the runtime leaves it),
  // in every hierarchy: a later run reusing the uid starts from nothing.
  for (const auto& [mnt, cgroup] : mounts())
    if (cgroup) ::rmdir((mnt + "/kubepods/besteffort/pod" + pod.uid).c_str());
  std::lock_guard<std::mutex> lk(impl_->mu);
  pods_.erase(std::remove_if(pods_.begin(), pods_.end(), [&](const Pod& p) { return p.sandbox_id == pod.sandbox_id; }),
              pods_.end());
  return ok;
}

Containerd::~Containerd() {
  std::vector<Pod> left;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    left = pods_;
  }
  for (const Pod& p : left) remove_pod(p);
  if (daemon_.pid() > 0) {
    ::kill(daemon_.pid(), SIGTERM);
    daemon_.wait(std::chrono::seconds(10));
  }
  if (dir_.empty()) return;
  // What a killed runtime may leave mounted under its root (rootfs overlays,
  // sandbox shm), innermost first.
  std::vector<std::string> under;
  for (const auto& [mnt, cgroup] : mounts())
    if (mnt.rfind(dir_ + "/", 0) == 0) under.push_back(mnt);
  std::sort(under.begin(), under.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& m : under) ::umount2(m.c_str(), MNT_DETACH);
}

}  // namespace vigil::e2e
