#!/usr/bin/env python3
"""tenant-load MODE ...: a hostile tenant's load on wbguardd (the guest side
of tests/bench/tenant-bench). Every mode writes one JSON line of what it
achieved to stdout when it ends (SIGTERM ends the endless ones).

  empties ROOT N            N empty cgroups below ROOT (a delegated subtree)
  churn ROOT RATE           create, populate (this process moves in), empty
                            and remove RATE sub-cgroups a second
  flap ROOT N               create N empty sub-cgroups, remove them, again,
                            as fast as it goes (inotify's events, no fork)
  many ROOT N DIR FILES     N cgroups, each writing FILES small files in DIR
  fs8 ROOT DIRS...          a cgroup dirtying every DIR, removed, again
  conns N PER               N addresses (127.0.0.2..) x PER connections to
                            the metrics port, each trickling a byte every 2 s
  reconnect N PER           N addresses x PER connections to the metrics
                            port, each opened again the moment the server
                            shuts it (a local user past its share)
  probe PORT PATHS OUT [COUNT [LIMIT [EVERY]]]
                            not a load: the kubelet's probe as it makes it,
                            one HTTP GET on 127.0.0.1:PORT every EVERY
                            seconds (0.5) from this one process (no exec in
                            the figure), PATHS (comma-separated) in turn,
                            its microseconds (or "fail": no 200 within
                            LIMIT seconds, 5) appended to OUT; COUNT of
                            them (0: until SIGTERM)

TENANT_HOME (a cgroup path below /sys/fs/cgroup): where it runs.
TENANT_UID: the user it runs as, once there.
"""
import json
import os
import signal
import socket
import sys
import time

stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
CG = "/sys/fs/cgroup"


def move(path):
    with open(os.path.join(CG, path, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def home():
    return open("/proc/self/cgroup").read().strip().split("::", 1)[1].lstrip("/")


def empties(root, n):
    t0 = time.time()
    made = 0
    for i in range(n):
        if stop:
            break
        d = os.path.join(CG, root, "e%d" % (i // 1000), "c%d" % i)
        if i % 1000 == 0:
            os.makedirs(os.path.dirname(d), exist_ok=True)
        os.mkdir(d)
        made += 1
    return {"made": made, "seconds": round(time.time() - t0, 1)}


def churn(root, rate):
    me, n, t0 = home(), 0, time.time()
    step = 1.0 / rate
    while not stop:
        p = os.path.join(root, "ch%d" % n)
        os.mkdir(os.path.join(CG, p))
        move(p)
        move(me)
        os.rmdir(os.path.join(CG, p))
        n += 1
        delay = t0 + n * step - time.time()
        if delay > 0:
            time.sleep(delay)
    return {"cycles": n, "per_sec": round(n / (time.time() - t0), 1)}


def flap(root, n):
    rounds, t0 = 0, time.time()
    while not stop:
        for op in (os.mkdir, os.rmdir):
            for i in range(n):
                try:
                    op(os.path.join(CG, root, "fl%d" % i))
                except OSError:
                    pass
        rounds += 1
    return {"rounds": rounds, "cgroups_per_sec": round(rounds * n / (time.time() - t0), 1)}


def many(root, n, d, files):
    me, t0, done = home(), time.time(), 0
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        if stop:
            break
        p = os.path.join(root, "m%d" % i)
        os.mkdir(os.path.join(CG, p))
        move(p)
        for f in range(files):
            with open(os.path.join(d, "m%d-%d" % (i, f)), "w") as fh:
                fh.write("x" * 100)
        move(me)
        done += 1
    return {"cgroups": done, "files": done * files, "seconds": round(time.time() - t0, 1)}


def fs8(root, dirs):
    me, n, t0 = home(), 0, time.time()
    while not stop:
        p = os.path.join(root, "fs%d" % n)
        os.mkdir(os.path.join(CG, p))
        move(p)
        for d in dirs:
            with open(os.path.join(d, "f%d" % (n % 4)), "wb") as fh:
                fh.write(b"x" * 65536)
        move(me)
        os.rmdir(os.path.join(CG, p))
        n += 1
        time.sleep(0.5)
    return {"removals": n, "filesystems": len(dirs), "seconds": round(time.time() - t0, 1)}


def conn(addr):
    s = socket.socket()
    s.bind((addr, 0))
    try:
        s.connect(("127.0.0.1", int(os.environ.get("TENANT_PORT", "9573"))))
        s.sendall(b"G")
        return s
    except OSError:
        s.close()
        return None


def conns(n, per):
    """Slots held as long as the server lets them be: one the server
    closes is opened again at once."""
    held = {}
    opened = closed = 0
    for a in range(2, 2 + n):
        for i in range(per):
            held[(a, i)] = conn("127.0.0.%d" % a)
            opened += held[(a, i)] is not None
    while not stop:
        time.sleep(2)
        for k, s in held.items():
            try:
                if s is None:
                    raise OSError
                s.sendall(b"E")
            except OSError:
                closed += s is not None
                held[k] = conn("127.0.0.%d" % k[0])
                opened += held[k] is not None
    return {"opened": opened, "closed_by_server": closed}


def reconnect(n, per):
    """As conns, but a slot the server shuts is opened again at once."""
    import select
    held, opened, shut = {}, 0, 0
    while not stop:
        for a in range(2, 2 + n):
            for i in range(per):
                if held.get((a, i)) is None:
                    held[(a, i)] = conn("127.0.0.%d" % a)
                    opened += held[(a, i)] is not None
        live = [s for s in held.values() if s is not None]
        for s in select.select(live, [], [], 0.5)[0] if live else []:
            try:
                gone = s.recv(1) == b""
            except OSError:
                gone = True
            if gone:
                held[next(k for k, v in held.items() if v is s)] = None
                s.close()
                shut += 1
    return {"opened": opened, "shut_by_server": shut}


def probe(port, paths, out, count=0, limit=5.0, every=0.5):
    n = failed = 0
    paths = paths.split(",")
    with open(out, "a") as f:
        while not stop and (not count or n < count):
            t0 = time.monotonic()
            ok = False
            path = paths[n % len(paths)]
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
                    s.settimeout(max(0.01, limit - (time.monotonic() - t0)))
                    s.sendall(b"GET %s HTTP/1.0\r\n\r\n" % path.encode())
                    data = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                    ok = data.startswith(b"HTTP/1.") and data.split(b" ", 2)[1] == b"200"
            except (OSError, IndexError):
                ok = False
            us = int((time.monotonic() - t0) * 1e6)
            ok = ok and us < limit * 1e6
            f.write("%d\n" % us if ok else "fail\n")
            f.flush()
            n += 1
            failed += not ok
            time.sleep(every)
    return {"samples": n, "failed": failed}


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if os.environ.get("TENANT_HOME"):
        move(os.environ["TENANT_HOME"])  # the tenant's own cgroup (its CPU limit)
    if os.environ.get("TENANT_UID"):
        # a local user's load (after the move: that needs root)
        os.setgid(int(os.environ["TENANT_UID"]))
        os.setuid(int(os.environ["TENANT_UID"]))
    if mode == "empties":
        r = empties(args[0], int(args[1]))
    elif mode == "churn":
        r = churn(args[0], float(args[1]))
    elif mode == "flap":
        r = flap(args[0], int(args[1]))
    elif mode == "many":
        r = many(args[0], int(args[1]), args[2], int(args[3]))
    elif mode == "fs8":
        r = fs8(args[0], args[1:])
    elif mode == "conns":
        r = conns(int(args[0]), int(args[1]))
    elif mode == "reconnect":
        r = reconnect(int(args[0]), int(args[1]))
    elif mode == "probe":
        r = probe(int(args[0]), args[1], args[2], *(f(a) for f, a in zip((int, float, float), args[3:])))
    else:
        sys.exit("tenant-load: unknown mode " + mode)
    print(json.dumps({mode: r}), flush=True)


main()
