#include "engine/agent/pod_responses.h"

#include <chrono>
#include <utility>

#include <nlohmann/json.hpp>

namespace vigil::agent {
namespace {

constexpr std::chrono::milliseconds kRequestTimeout{10000};

}  // namespace

PodResponder::PodResponder(state::K8sConfig cfg, Done done, std::size_t capacity)
    : cfg_(std::move(cfg)), done_(std::move(done)), capacity_(capacity) {
  thread_ = std::thread([this] { loop(); });
}

PodResponder::~PodResponder() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    queue_.clear();
  }
  client_.cancel();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PodResponder::offer(PodResponseJob job) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void PodResponder::wait_idle() {
  std::unique_lock<std::mutex> lk(mu_);
  idle_cv_.wait(lk, [this] { return stop_ || (queue_.empty() && !busy_); });
}

net::HttpRequest PodResponder::request(const PodResponseJob& job, std::string& body) const {
  net::HttpRequest r =
      state::api_request(cfg_, "/api/v1/namespaces/" + net::url_encode(job.ns) + "/pods/" + net::url_encode(job.name));
  r.timeout = kRequestTimeout;
  r.max_body = 64 * 1024;
  r.truncate_body = true;  // the pod that comes back is not needed
  nlohmann::json j;
  if (job.response == rules::kResponseDeletePod) {
    r.method = net::HttpMethod::kDelete;
    r.headers = {{"Accept", "application/json"}, {"Content-Type", "application/json"}};
    j = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", job.uid}}}};
  } else {
    r.method = net::HttpMethod::kPatch;
    r.headers = {{"Accept", "application/json"}, {"Content-Type", "application/merge-patch+json"}};
    j = {{"metadata",
          {{"labels", {{"vigil.dev/quarantined", "true"}}},
           {"annotations", {{"vigil.dev/quarantine-rule", job.rule}}}}}};
  }
  // Rule names come from rule files: invalid UTF-8 is replaced, never thrown.
  body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body = body;
  return r;
}

void PodResponder::loop() {
  while (true) {
    PodResponseJob job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      busy_ = false;
      idle_cv_.notify_all();
      cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    std::string body;
    const net::HttpRequest req = request(job, body);
    const net::HttpResult res = client_.perform(req);
    if (done_) done_(job, res.success() ? std::string() : res.describe());
  }
}

}  // namespace vigil::agent
