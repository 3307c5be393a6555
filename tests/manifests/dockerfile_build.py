"""Helper for static-build.sh: reproduce the Dockerfile's build context and cargo command.

Copies the work tree, filtered through .dockerignore the way the Docker engine filters it
(last matching pattern wins, "!" re-includes, a pattern also matches everything below a
matching directory, "**" spans directories), to --context. Then prints the builder stage's
cargo command, one argv element per line, with leading VAR=value assignments kept (to be run
through `env`).
"""

import argparse
import os
import pathlib
import re
import shlex
import shutil
import sys


def pattern_regex(pattern):
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif c == "*":
            out += "[^/]*"
            i += 1
        elif c == "?":
            out += "[^/]"
            i += 1
        elif c == "[":
            end = pattern.find("]", i)
            if end < 0:
                out += re.escape(c)
                i += 1
            else:
                out += pattern[i:end + 1]
                i = end + 1
        else:
            out += re.escape(c)
            i += 1
    return re.compile(out + r"\Z")


def read_rules(path):
    rules = []
    if not path.exists():
        return rules
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = os.path.normpath(line[1:].strip() if include else line).lstrip("/")
        rules.append((include, pattern, pattern_regex(pattern)))
    return rules


def excluded(rel, rules):
    parts = rel.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for include, _, regex in rules:
        if any(regex.match(p) for p in prefixes):
            result = not include
    return result


def may_contain_included(rel_dir, rules):
    """Could an exception pattern re-include something below an excluded directory?"""
    return any(include and (pattern.startswith(rel_dir + "/") or pattern.startswith("**")
                            or "*" in pattern.split("/")[0])
               for include, pattern, _ in rules)


def copy_context(root, context, rules):
    """Brings `context` to exactly the files of `root` that the build would see. A file whose
    bytes are unchanged keeps its time stamp, and a changed one gets the current time: cargo's
    freshness check (time stamps) then rebuilds exactly when a source changed, also when the
    context is shared by several checkouts whose files carry older times than the last build."""
    context.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d == ".git" and not rel_dir:
                continue
            if excluded(rel, rules) and not may_contain_included(rel, rules):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if not excluded(rel, rules):
                wanted.add(rel)
                sync_file(root / rel, context / rel)
    for dirpath, _, filenames in os.walk(context, topdown=False):
        for f in filenames:
            path = pathlib.Path(dirpath) / f
            if str(path.relative_to(context)) not in wanted:
                path.unlink()
        if pathlib.Path(dirpath) != context and not any(pathlib.Path(dirpath).iterdir()):
            pathlib.Path(dirpath).rmdir()


def sync_file(src, dest):
    data = src.read_bytes()
    if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == data:
        shutil.copymode(src, dest)
        return
    if dest.is_dir():
        shutil.rmtree(dest)
    elif dest.exists() or dest.is_symlink():
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    shutil.copymode(src, dest)


def cargo_command(dockerfile):
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    runs = []
    for line in text.splitlines():
        line = line.strip()
        if line.upper().startswith("FROM "):
            runs.append([])
        elif line.upper().startswith("RUN ") and runs:
            runs[-1].append(line[4:])
    commands = []
    for stage in runs[:-1]:  # build stages only, not the runtime stage
        for run in stage:
            for part in run.split("&&"):
                words = shlex.split(part)
                while words and words[0].startswith("--mount="):
                    words.pop(0)
                if "cargo" in words and "build" in words:
                    commands.append(words)
    if len(commands) != 1:
        sys.exit(f"expected exactly one `cargo build` in the Dockerfile's build stages, found {len(commands)}")
    return commands[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, required=True)
    parser.add_argument("--context", type=pathlib.Path, required=True)
    args = parser.parse_args()
    command = cargo_command(args.root / "Dockerfile")
    copy_context(args.root, args.context, read_rules(args.root / ".dockerignore"))
    print("\n".join(command))


if __name__ == "__main__":
    main()
