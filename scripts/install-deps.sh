#!/usr/bin/env bash
# Installs what vigil needs, from Debian 12 packages. Safe to run again:
# apt-get skips what is already there.
#
#   scripts/install-deps.sh          everything: build, tests, fuzzing, benchmarks
#   scripts/install-deps.sh agent    only what building and running the agent needs
#                                    (the Quickstart's first command)
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get needs it)" >&2
  exit 1
fi
profile=${1:-all}
agent=(
  build-essential cmake ninja-build pkg-config git
  clang                                    # BPF objects
  libbpf-dev bpftool libelf-dev zlib1g-dev # the sensor
  libre2-dev libyaml-cpp-dev libyaml-dev libspdlog-dev libfmt-dev libcli11-dev
  librdkafka-dev libcurl4-openssl-dev libssl-dev libzstd-dev nlohmann-json3-dev
  libcpp-httplib-dev                       # the metrics and health endpoint (webserver:)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc # the CRI client
)
tests=(
  llvm libclang-rt-14-dev                  # libFuzzer targets
  libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 procps util-linux openssl python3 # integration tests: netns, stand-in servers
  python3-prometheus-client                  # metrics tests: a real Prometheus text parser
  rsyslog kcat                               # output tests: real syslog and Kafka peers
  podman runc mmdebstrap                     # image test: deploy/build-image.sh, then podman run
  containerd busybox-static                  # CRI e2e: a real runtime on a private socket, offline images
  clang-format                               # the format check (tests/style)
)
case "$profile" in
  agent) pkgs=("${agent[@]}") ;;
  all) pkgs=("${agent[@]}" "${tests[@]}") ;;
  *) echo "install-deps: unknown profile '$profile' (agent or all)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
