// container.* and k8s.*: the container and pod the process runs in.
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"
#include "engine/state/metadata.h"

namespace vigil::rules {

using namespace fx;

namespace {

void x_container_id(const X& x, const F&, E& o) noexcept {
  std::string_view id;
  if (x.ctx->container) id = x.ctx->container->id;
  else if (auto* p = proc_of(x)) id = p->container_id;
  if (id.empty()) {
    str(o, "host");
    return;
  }
  str(o, id.substr(0, 12));
}
void x_container_full_id(const X& x, const F&, E& o) noexcept {
  std::string_view id;
  if (x.ctx->container) id = x.ctx->container->id;
  else if (auto* p = proc_of(x)) id = p->container_id;
  str(o, id.empty() ? std::string_view("host") : id);
}
void x_container_name(const X& x, const F&, E& o) noexcept {
  auto* c = x.ctx->container;
  if (!c) {
    if (auto* p = proc_of(x); !p || p->container_id.empty()) str(o, "host");
    return;
  }
  if (!c->name.empty()) str(o, c->name);
  else if (x.ctx->pod_container && !x.ctx->pod_container->name.empty()) str(o, x.ctx->pod_container->name);
}
std::string_view image_of(const X& x) noexcept {
  if (x.ctx->container && !x.ctx->container->image.empty()) return x.ctx->container->image;
  if (x.ctx->pod_container) return x.ctx->pod_container->image;
  return {};
}
// Splits "registry/repo:tag@digest" into repository and tag.
void split_image(std::string_view img, std::string_view& repo, std::string_view& tag) noexcept {
  auto at = img.find('@');
  std::string_view base = img.substr(0, at);
  auto slash = base.rfind('/');
  auto colon = base.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    repo = base.substr(0, colon);
    tag = base.substr(colon + 1);
  } else {
    repo = base;
    tag = {};
  }
}
void x_image(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (!i.empty()) str(o, i);
}
void x_image_repo(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (i.empty()) return;
  std::string_view r, t;
  split_image(i, r, t);
  str(o, r);
}
void x_image_tag(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (i.empty()) return;
  std::string_view r, t;
  split_image(i, r, t);
  if (!t.empty()) str(o, t);
}
void x_container_type(const X& x, const F&, E& o) noexcept {
  if (x.ctx->container && !x.ctx->container->runtime.empty()) str(o, x.ctx->container->runtime);
}
void x_privileged(const X& x, const F&, E& o) noexcept {
  if (x.ctx->container || x.ctx->pod_container) {
    boolean(o, (x.ctx->container && x.ctx->container->privileged) ||
                   (x.ctx->pod_container && x.ctx->pod_container->privileged));
  }
}
// When the container started: its pod's status.containerStatuses[].state.
// running.startedAt. vigil reads no runtime metadata, so no value for
// containers outside known pods.
void x_container_start_ts(const X& x, const F&, E& o) noexcept {
  if (auto* pc = x.ctx->pod_container; pc && pc->started_at_ns > 0) num(o, pc->started_at_ns);
}
void x_ns(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->ns);
}
void x_pod_name(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->name);
}
// The pod record's uid, else the one the container's cgroup path names (the
// kubelet's, known from the container's first event on).
void x_pod_uid(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->uid);
  else if (x.ctx->container && !x.ctx->container->pod_uid.empty()) str(o, x.ctx->container->pod_uid);
}
void x_meta(const X& x, const F&, E& o) noexcept { str(o, state::metadata_name(state::metadata_of(*x.ctx))); }
void x_pod_label(const X& x, const F& f, E& o) noexcept {
  if (!x.ctx->pod) return;
  auto it = x.ctx->pod->labels.find(f.arg);
  if (it != x.ctx->pod->labels.end()) str(o, it->second);
}
void x_pod_labels(const X& x, const F&, E& o) noexcept {
  if (!x.ctx->pod) return;
  Arena& a = *x.arena;
  for (const auto& [k, v] : x.ctx->pod->labels) {
    if (o.n >= Extracted::kMax) break;
    a.begin();
    a.append(k);
    a.append(':');
    a.append(v);
    str(o, a.finish());
  }
}

}  // namespace

void append_container_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"container.id", T::kString, A::kNone, false, "*", "Container id, 12 characters; 'host' for host processes.",
           x_container_id},
          {"container.full_id", T::kString, A::kNone, false, "*", "Full container id; 'host' for host processes.",
           x_container_full_id},
          {"container.name", T::kString, A::kNone, false, "*", "Container name ('host' for host processes).",
           x_container_name},
          {"container.image", T::kString, A::kNone, false, "*", "Container image (registry/repository:tag).", x_image},
          {"container.image.repository", T::kString, A::kNone, false, "*", "Image repository without the tag.",
           x_image_repo},
          {"container.image.tag", T::kString, A::kNone, false, "*", "Image tag.", x_image_tag},
          {"container.type", T::kString, A::kNone, false, "*", "Container runtime (containerd, cri-o, docker, podman).",
           x_container_type},
          {"container.start_ts", T::kInt, A::kNone, false, "*",
           "When the container started, ns since the epoch: its pod's "
           "status.containerStatuses[].state.running.startedAt (whole seconds, as the API gives it). No "
           "value for host processes and containers of pods the API has not reported (vigil reads no "
           "container runtime metadata).",
           x_container_start_ts},
          {"container.privileged", T::kBool, A::kNone, false, "*", "The container runs privileged.", x_privileged},
          {"k8s.ns.name", T::kString, A::kNone, false, "*", "Kubernetes namespace of the pod.", x_ns},
          {"k8s.pod.name", T::kString, A::kNone, false, "*", "Kubernetes pod name.", x_pod_name},
          {"k8s.pod.uid", T::kString, A::kNone, false, "*",
           "Kubernetes pod uid: the pod record's, else the one the container's cgroup path names (known "
           "before the pod is).",
           x_pod_uid},
          {"k8s.pod.id", T::kString, A::kNone, false, "*", "Kubernetes pod uid (Falco's older name; as k8s.pod.uid).",
           x_pod_uid},
          {"k8s.meta", T::kString, A::kNone, false, "*",
           "How complete the event's metadata is: 'complete' (its pod is known, with its name), 'incomplete' "
           "(the cgroup says it runs in a Kubernetes pod that is not known yet), 'container' (a container "
           "outside Kubernetes), 'host' (not in a container). On every alert (append_output).",
           x_meta},
          {"k8s.pod.label", T::kString, A::kRequiredKey, false, "*",
           "A pod label: k8s.pod.label[app] or k8s.pod.label.app.", x_pod_label},
          {"k8s.pod.labels", T::kList, A::kNone, false, "*", "All pod labels as key:value.", x_pod_labels},
      });
}

}  // namespace vigil::rules
