#!/usr/bin/env python3
"""Compares the GPU kernels of the CUDA build with those of the ROCm build.

    scripts/kernel-set.py BUILD_CUDA BUILD_ROCM [--list]

The kernels are read from the device code embedded in the GPU object files, not from the sources:
- CUDA (nvcc): each object's .nv_fatbin section holds cubin ELF images; a kernel (an entry
  function) is a cubin section named .nv.info.<mangled name>.
- ROCm (clang HIP): each object's .hip_fatbin section is a clang offload bundle holding one AMDGPU
  code object per architecture; a kernel is a symbol <mangled name>.kd (its kernel descriptor).
Names are demangled with c++filt and normalised (wick::cuda / wick::rocm -> wick::GPU, nvcc's
anonymous-namespace tags -> (anonymous namespace)), then the sets are compared per object file:
the CUDA set must equal the set of every ROCm architecture. Exit status 1 on any difference.
Uses only objcopy, c++filt and the Python standard library.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile


def elf_sections(blob, base):
    """Yields (name, offset, size, type, link, entsize) for the ELF64 image at blob[base:]."""
    if blob[base:base + 4] != b"\x7fELF" or blob[base + 4] != 2:
        return
    shoff, = struct.unpack_from("<Q", blob, base + 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, base + 0x3A)
    headers = []
    for i in range(shnum):
        off = base + shoff + i * shentsize
        if off + 64 > len(blob):
            return
        name, typ, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", blob, off)
        headers.append((name, offset, size, typ, link, entsize))
    if shstrndx >= len(headers):
        return
    strtab_off = base + headers[shstrndx][1]
    for name, offset, size, typ, link, entsize in headers:
        end = blob.index(b"\0", strtab_off + name)
        yield blob[strtab_off + name:end].decode(), base + offset, size, typ, link, entsize


def section_bytes(obj, section):
    with tempfile.NamedTemporaryFile() as tmp:
        r = subprocess.run(["objcopy", "-O", "binary", "--only-section=" + section, obj, tmp.name],
                           capture_output=True)
        if r.returncode != 0:
            return b""
        with open(tmp.name, "rb") as f:
            return f.read()


def cuda_kernels(obj):
    blob = section_bytes(obj, ".nv_fatbin")
    names = set()
    for m in re.finditer(re.escape(b"\x7fELF"), blob):
        for name, *_ in elf_sections(blob, m.start()):
            if name.startswith(".nv.info."):
                names.add(name[len(".nv.info."):])
    return {"sm": names} if names else {}


def hip_kernels(obj):
    blob = section_bytes(obj, ".hip_fatbin")
    magic = b"__CLANG_OFFLOAD_BUNDLE__"
    out = {}
    pos = blob.find(magic)
    while pos >= 0:
        count, = struct.unpack_from("<Q", blob, pos + len(magic))
        p = pos + len(magic) + 8
        for _ in range(count):
            offset, size, tlen = struct.unpack_from("<QQQ", blob, p)
            triple = blob[p + 24:p + 24 + tlen].decode()
            p += 24 + tlen
            if not triple.startswith("hip") or "amdgcn" not in triple:
                continue
            arch = triple.rsplit("-", 1)[-1]
            code = blob[pos + offset:pos + offset + size]
            names = out.setdefault(arch, set())
            secs = list(elf_sections(code, 0))
            for name, off, sz, typ, link, entsize in secs:
                if typ != 2:  # SHT_SYMTAB
                    continue
                stroff = secs[link][1]
                for i in range(sz // entsize):
                    st_name, = struct.unpack_from("<I", code, off + i * entsize)
                    end = code.index(b"\0", stroff + st_name)
                    sym = code[stroff + st_name:end].decode()
                    if sym.endswith(".kd"):
                        names.add(sym[:-3])
        pos = blob.find(magic, pos + 1)
    return out


def demangle(names):
    names = sorted(names)
    if not names:
        return {}
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return dict(zip(names, r.stdout.splitlines()))


def strip_params(s):
    """The kernel's name with its template arguments, without the return type and parameter list.

    The parameter types follow from the template arguments, and the two compilers spell dependent
    parameter types differently (nvcc: `wick::is_reduced_float_v`, clang:
    `is_reduced_float_v<double>`), so they are left out of the comparison."""
    depth = 0
    for i, c in enumerate(s):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            s = s[:i]
            break
    return s.split(" ", 1)[1] if s.startswith("void ") else s


def normalise(s):
    s = re.sub(r"wick::(cuda|rocm)::", "wick::GPU::", s)
    s = re.sub(r"_GLOBAL__N__[0-9A-Za-z_]+?_(?=::)", "{anon}", s)
    s = s.replace("(anonymous namespace)", "{anon}")
    return strip_params(s)


def collect(build, reader, suffix):
    per_file = {}
    for root, _dirs, files in os.walk(build):
        for f in files:
            if not f.endswith(suffix):
                continue
            path = os.path.join(root, f)
            found = reader(path)
            if found:
                key = re.sub(r"\.(cu|hip)\.o$", "", f)
                per_file[key] = found
    return per_file


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    cuda = collect(args[0], cuda_kernels, ".cu.o")
    rocm = collect(args[1], hip_kernels, ".o")
    if not cuda or not rocm:
        print(f"no GPU objects found (cuda: {len(cuda)} files, rocm: {len(rocm)} files)", file=sys.stderr)
        return 1
    raw = set()
    for d in list(cuda.values()) + list(rocm.values()):
        for names in d.values():
            raw |= names
    dm = demangle(raw)
    norm = lambda names: {normalise(dm[n]) for n in names}

    failed = False
    archs = sorted({a for d in rocm.values() for a in d})
    total = {"cuda": 0, **{a: 0 for a in archs}}
    for key in sorted(set(cuda) | set(rocm)):
        ref = norm(cuda.get(key, {}).get("sm", set()))
        total["cuda"] += len(ref)
        for arch in archs:
            got = norm(rocm.get(key, {}).get(arch, set()))
            total[arch] += len(got)
            if got != ref:
                failed = True
                print(f"{key}: cuda and {arch} differ")
                for n in sorted(ref - got)[:10]:
                    print(f"  only in cuda: {n}")
                for n in sorted(got - ref)[:10]:
                    print(f"  only in {arch}: {n}")
        if "--list" in sys.argv:
            for n in sorted(ref):
                print(f"{key}: {n}")
    counts = ", ".join(f"{k} {v}" for k, v in total.items())
    print(f"kernel sets over {len(set(cuda) | set(rocm))} GPU source files: {counts} -> "
          f"{'DIFFERENT' if failed else 'identical'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
