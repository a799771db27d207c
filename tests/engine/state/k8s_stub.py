#!/usr/bin/env python3
"""A stand-in Kubernetes API server for the pod watcher tests.

Speaks just enough of /api/v1/pods over HTTPS: LIST (JSON) and WATCH (a
chunked stream of newline-separated watch events), following a fixed script:

  LIST 1   -> pod A                                   (resourceVersion 100)
  WATCH 1  -> ADDED B, MODIFIED A, then the connection drops mid-stream
  WATCH 2  -> ERROR 410 Gone (the watcher must relist)
  LIST 2   -> pod A (modified), then C on a second page (continue token)
                                                      (resourceVersion 200)
  WATCH 3  -> DELETED A, BOOKMARK 250, then stays open
  WATCH n  -> stays open

Every request is logged as one JSON line to --log (path, query, auth header),
so the test can check what the watcher asked for. The chosen port is written
to --port-file once the server listens.

--stable-pod-gpus LIST (e.g. "1" or "0,1") gives pod C's container those GPUs:
NVIDIA_VISIBLE_DEVICES=LIST and an nvidia.com/gpu limit of as many; without it
pod C has no GPU.
"""
import argparse
import json
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

NODE = "gpu-node-1"
UID_A = "aaaaaaaa-0000-4000-8000-000000000001"
UID_B = "bbbbbbbb-0000-4000-8000-000000000002"
UID_C = "cccccccc-0000-4000-8000-000000000003"
CID_A = "a" * 64
CID_B = "b" * 64
CID_C = "c" * 64


def pod(uid, name, rv, cid, labels=None, gpu=None, env=None, privileged=False):
    container = {"name": "main", "image": "registry.example/%s:1" % name}
    if gpu is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpu, "cpu": "2"}}
    if env is not None:
        container["env"] = [{"name": "OTHER", "value": "x"},
                            {"name": "NVIDIA_VISIBLE_DEVICES", "value": env}]
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ml", "uid": uid,
                     "resourceVersion": str(rv), "labels": labels or {"app": name}},
        "spec": {"nodeName": NODE, "containers": [container]},
        "status": {"containerStatuses": [{"name": "main", "containerID": "containerd://" + cid}]},
    }


class State:
    lock = threading.Lock()
    lists = 0
    watches = 0
    log = None
    stable_pod_gpus = None
    stable_pod_delay_s = 0.0


def stable_pod_c():
    gpus = State.stable_pod_gpus
    if not gpus:
        return pod(UID_C, "c", 150, CID_C, privileged=True)
    count = len([g for g in gpus.split(",") if g.strip()])
    return pod(UID_C, "c", 150, CID_C, privileged=True, gpu=str(count), env=gpus)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self, kind, n, query):
        with State.lock:
            State.log.write(json.dumps({"kind": kind, "n": n, "t": time.time(), "path": urlparse(self.path).path,
                                        "query": query,
                                        "auth": self.headers.get("Authorization", "")}) + "\n")
            State.log.flush()

    def send_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self):
        # Close the TCP connection without ending the chunked body.
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def hold_open(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(0.2)

    def do_GET(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path != "/api/v1/pods":
            self.send_error(404)
            return
        if query.get("fieldSelector") != "spec.nodeName=" + NODE:
            self.send_error(400, "wrong fieldSelector")
            return
        if query.get("watch") in ("1", "true"):
            with State.lock:
                State.watches += 1
                n = State.watches
            self.record("watch", n, query)
            self.start_stream()
            if n == 1:
                self.chunk({"type": "ADDED", "object": pod(UID_B, "b", 101, CID_B)})
                self.chunk({"type": "MODIFIED",
                            "object": pod(UID_A, "a", 102, CID_A, labels={"app": "a", "v": "2"},
                                          gpu="1", env="0")})
                time.sleep(0.8)  # let the test see B before it disappears on relist
                self.drop()
            elif n == 2:
                self.chunk({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                                                        "status": "Failure", "code": 410,
                                                        "reason": "Expired",
                                                        "message": "too old resource version"}})
                self.end_stream()
            elif n == 3:
                self.chunk({"type": "DELETED", "object": pod(UID_A, "a", 201, CID_A)})
                self.chunk({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                           "metadata": {"resourceVersion": "250"}}})
                self.hold_open(30)
                self.end_stream()
            else:
                self.hold_open(30)
                self.end_stream()
            return
        if query.get("continue") == "page2":
            # Second page of LIST 2 (pagination with a continue token),
            # after --stable-pod-delay-s: pod C announced late.
            if State.stable_pod_delay_s > 0:
                time.sleep(State.stable_pod_delay_s)
            self.record("list-page2", 0, query)
            self.send_json({"kind": "PodList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "200"},
                            "items": [stable_pod_c()]})
            return
        with State.lock:
            State.lists += 1
            n = State.lists
        self.record("list", n, query)
        meta = {}
        if n == 1:
            items, meta["resourceVersion"] = [pod(UID_A, "a", 10, CID_A)], "100"
        else:
            items = [pod(UID_A, "a", 102, CID_A, labels={"app": "a", "v": "2"}, gpu="1", env="0")]
            meta["resourceVersion"] = "200"
            meta["continue"] = "page2"
        self.send_json({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})

    def changed(self, kind):
        # A PATCH or DELETE of one pod (vigil's label and delete_pod
        # responses): recorded with its body, answered with the pod.
        url = urlparse(self.path)
        length = min(int(self.headers.get("Content-Length", "0") or 0), 1 << 20)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        with State.lock:
            State.log.write(json.dumps({"kind": kind, "n": 0, "t": time.time(), "path": url.path,
                                        "content_type": self.headers.get("Content-Type", ""),
                                        "body": body,
                                        "auth": self.headers.get("Authorization", "")}) + "\n")
            State.log.flush()
        parts = url.path.split("/")
        if len(parts) != 7 or parts[1:4] != ["api", "v1", "namespaces"] or parts[5] != "pods":
            self.send_error(404)
            return
        self.send_json({"kind": "Pod", "apiVersion": "v1",
                        "metadata": {"namespace": parts[4], "name": parts[6]}})

    def do_PATCH(self):
        self.changed("patch")

    def do_DELETE(self):
        self.changed("delete")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--stable-pod-gpus", default=None)
    ap.add_argument("--stable-pod-delay-s", type=float, default=0)
    args = ap.parse_args()
    State.stable_pod_delay_s = args.stable_pod_delay_s
    State.log = open(args.log, "a")
    State.stable_pod_gpus = args.stable_pod_gpus
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(port))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
