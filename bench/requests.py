#!/usr/bin/env python3
"""Client for bench/callgrind.sh: a fixed number of keep-alive POST /sync on one loopback
connection, so that a server's instruction count per request comes out of two runs by
subtraction (N and M requests, everything else equal).

  python3 bench/requests.py ADDR BODY N [304]

Sends one POST /sync with BODY first (its answer must be 200; with 304 its ETag is kept), then N
more, each with If-None-Match: that ETag when 304 is given. Every answer's status is checked
(200, or 304 with the ETag); the body of each answer is read in full. Standard library only.
"""

import socket
import sys


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    with open(sys.argv[2], "rb") as f:
        body = f.read()
    count = int(sys.argv[3])
    not_modified = len(sys.argv) > 4 and sys.argv[4] == "304"
    conn = socket.create_connection((host, int(port)), timeout=600)
    reader = conn.makefile("rb")

    def post(etag=None):
        head = (
            "POST /sync HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n" % (host, len(body))
        )
        if etag:
            head += "If-None-Match: %s\r\n" % etag
        conn.sendall((head + "\r\n").encode() + body)
        status = reader.readline().split()[1]
        length, tag = 0, None
        while True:
            line = reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"etag":
                tag = value.strip().decode()
        reader.read(length)
        return status, tag

    status, etag = post()
    if status != b"200" or (not_modified and not etag):
        sys.exit("first answer: %r, ETag %r" % (status, etag))
    want = b"304" if not_modified else b"200"
    for _ in range(count):
        status, _ = post(etag if not_modified else None)
        if status != want:
            sys.exit("expected %r, got %r" % (want, status))
    conn.close()


if __name__ == "__main__":
    main()
