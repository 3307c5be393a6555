"""Short-lived test certificates made with openssl(1) in a directory: CAs, and certificates each
signed by one of them. The one way the suite's Python drivers make TLS material.

    from test_pki import issue
    issue(d, cas={"ca": "peers-ca"}, certs=[("server", "ca", "server", "localhost")],
          server_sans="DNS:localhost,IP:127.0.0.1")

writes NAME.key / NAME.crt for every CA and certificate (2 days valid, RSA 2048).
"""
import os
import subprocess


def _openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


def issue(d, cas, certs, server_sans):
    """`cas`: {name: common name}; `certs`: [(name, ca name, "server" or "client", common name)];
    server certificates carry `server_sans` (an openssl subjectAltName value)."""
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write(f"subjectAltName={server_sans}\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for ca, cn in cas.items():
        _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                 "-days", "2", "-subj", f"/CN={cn}")
    for name, ca, usage, cn in certs:
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={cn}")
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{usage}.ext")
