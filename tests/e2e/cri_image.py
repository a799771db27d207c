#!/usr/bin/env python3
"""Builds a one-layer image as a `docker save` archive, for `ctr images import`.

    cri_image.py OUT.tar NAME:TAG BUSYBOX [CMD...]

The layer holds the static BUSYBOX as /bin/busybox with links for the
applets the e2e tests run (sh, sleep, cat), /etc/passwd, /etc/group and a
stand-in /etc/shadow. CMD is the image's default command (the pause image's
`sleep`). Nothing is downloaded: CRI e2e tests run offline.
"""
import hashlib
import io
import json
import sys
import tarfile

APPLETS = ["sh", "sleep", "cat", "true"]
FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\n",
    "etc/group": b"root:x:0:\n",
    "etc/shadow": b"root:*:19000:0:99999:7:::\n",
}


def add_dir(tar, name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def add_bytes(tar, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def layer(busybox):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ["bin", "etc", "tmp", "proc", "sys", "dev", "root"]:
            add_dir(tar, d)
        with open(busybox, "rb") as f:
            add_bytes(tar, "bin/busybox", f.read(), 0o755)
        for a in APPLETS:
            info = tarfile.TarInfo("bin/" + a)
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            tar.addfile(info)
        for name, data in FILES.items():
            add_bytes(tar, name, data, 0o640 if name.endswith("shadow") else 0o644)
    return buf.getvalue()


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, ref, busybox, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    data = layer(busybox)
    diff_id = "sha256:" + hashlib.sha256(data).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": cmd or ["/bin/sh"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    cfg = json.dumps(config, sort_keys=True).encode()
    cfg_name = hashlib.sha256(cfg).hexdigest() + ".json"
    manifest = [{"Config": cfg_name, "RepoTags": [ref], "Layers": ["layer.tar"]}]
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, cfg_name, cfg)
        add_bytes(tar, "layer.tar", data)
        add_bytes(tar, "manifest.json", json.dumps(manifest).encode())


if __name__ == "__main__":
    main()
