#!/usr/bin/env python3
"""A stand-in for the kubelet pod-resources gRPC service on a unix socket.

Speaks HTTP/2 (prior knowledge, as gRPC clients do) with the h2 package and
answers /v1.PodResourcesLister/List with a ListPodResourcesResponse encoded by
hand (protobuf wire format), followed by grpc-status trailers. Other paths get
grpc-status 12 (UNIMPLEMENTED) and no message.

Assignments come from --assign ns/pod/container=resource:id1,id2 (repeatable).
Each request is logged as a JSON line to --log.
"""
import argparse
import json
import os
import socket
import sys
import threading

import h2.config
import h2.connection
import h2.events


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((num << 3) | 2) + varint(len(data)) + data


def encode_response(assignments):
    # pods: {(ns, pod): {container: [(resource, [ids])]}}
    pods = {}
    for (ns, pod, container, resource, ids) in assignments:
        pods.setdefault((ns, pod), {}).setdefault(container, []).append((resource, ids))
    msg = b""
    for (ns, pod), containers in pods.items():
        pr = field_bytes(1, pod) + field_bytes(2, ns)
        for cname, devices in containers.items():
            cr = field_bytes(1, cname)
            for resource, ids in devices:
                cd = field_bytes(1, resource)
                for i in ids:
                    cd += field_bytes(2, i)
                # An unknown field (topology = 3, varint-free message) must be skipped.
                cd += field_bytes(3, field_bytes(1, b"\x08\x01"))
                cr += field_bytes(2, cd)
            pr += field_bytes(3, cr)
        msg += field_bytes(1, pr)
    return msg


def serve(conn, assignments, log):
    config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    h2c = h2.connection.H2Connection(config=config)
    h2c.initiate_connection()
    conn.sendall(h2c.data_to_send())
    paths = {}
    while True:
        data = conn.recv(65535)
        if not data:
            return
        for ev in h2c.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                headers = dict(ev.headers)
                paths[ev.stream_id] = headers
                log.write(json.dumps({"path": headers.get(":path"),
                                      "content-type": headers.get("content-type"),
                                      "method": headers.get(":method")}) + "\n")
                log.flush()
            elif isinstance(ev, h2.events.DataReceived):
                h2c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                headers = paths.get(ev.stream_id, {})
                h2c.send_headers(ev.stream_id, [(":status", "200"),
                                                ("content-type", "application/grpc")])
                if headers.get(":path") == "/v1.PodResourcesLister/List":
                    body = encode_response(assignments)
                    frame = b"\x00" + len(body).to_bytes(4, "big") + body
                    h2c.send_data(ev.stream_id, frame)
                    h2c.send_headers(ev.stream_id, [("grpc-status", "0")], end_stream=True)
                else:
                    h2c.send_headers(ev.stream_id, [("grpc-status", "12")], end_stream=True)
        conn.sendall(h2c.data_to_send())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--assign", action="append", default=[])
    args = ap.parse_args()
    assignments = []
    for a in args.assign:
        where, what = a.split("=", 1)
        ns, pod, container = where.split("/")
        resource, ids = what.split(":", 1)
        assignments.append((ns, pod, container, resource, ids.split(",")))
    log = open(args.log, "a")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = args.socket + ".tmp"
    srv.bind(tmp)
    srv.listen(16)
    os.rename(tmp, args.socket)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, assignments, log), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
