#!/usr/bin/env python3
"""Writes the storage benchmark's crates (benches/storage/README.md): N GLSL compute shaders of
about 16 KB of SPIR-V each (a 770-float constant table, distinct per shader, indexed at run time
so the optimizer keeps it), copied into

  mcpp-header/ mcpp-object/ mcpp-sidecar/   cargo-mcpp (build.rs = mcpp_build::build()), storage = each form
  include-bytes/                            hand-written: build.rs runs glslangValidator on every shader
                                            (threads = cores) into OUT_DIR, include_bytes! of each .spv
  prebuilt/                                 include_bytes! of SPIR-V compiled once here (no build script):
                                            the floor, no compiler in the build

and the same SPIR-V bytes as data files (tools-embed, `element = "words"`, no compiler in the build),
against `prebuilt/` as the hand-written crate:

  embed-header/ embed-object/ embed-sidecar/  cargo-mcpp, `[package.metadata.mcpp.embed]` of data/*.bin

and, with --big MB, one data file of MB MiB (`data/big.bin`, filler words) in big-header/ and
big-object/ (embedded as words) and big-include-bytes/ (hand-written `include_bytes!`, no build script).

usage: gen.py WORK N REPO [--big MB]
Deterministic: the same arguments write the same bytes."""
import os, shutil, subprocess, sys

K = 770  # table entries: ~16.3 KB of SPIR-V with glslangValidator -Os


def shader(i: int) -> str:
    vals = ", ".join(f"{(i * K + j) * 0.0007 + 0.25:.6f}" for j in range(K))
    return (
        "#version 450\nlayout(local_size_x = 64) in;\n"
        "layout(std430, binding = 0) buffer Data { float data[]; };\n"
        f"const float TABLE[{K}] = float[{K}]({vals});\n"
        "void main() {\n    uint i = gl_GlobalInvocationID.x;\n"
        f"    data[i] = data[i] * TABLE[i % {K}u] + {i}.0;\n}}\n"
    )


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = open(path).read() if os.path.exists(path) else None
    if old != text:  # an unchanged file keeps its mtime: no rebuild for nothing
        with open(path, "w") as f:
            f.write(text)


SHADERS_META = """accel = "vulkan1.2"
sources = ["shaders/*.comp"]
storage = "{storage}"

[package.metadata.mcpp.spirv]
compiler = "glslang"
"""

EMBED_META = """storage = "{storage}"

[package.metadata.mcpp.embed]
files = [{{ glob = "data/*.bin", element = "words" }}]
"""


def write_bytes(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or open(path, "rb").read() != data:
        with open(path, "wb") as f:
            f.write(data)


def mcpp_crate(d: str, name: str, storage: str, repo: str, ids: list, sidecar: bool, meta: str = SHADERS_META) -> None:
    write(f"{d}/Cargo.toml", f"""[package]
name = "{name}"
version = "0.1.0"
edition = "2021"
publish = false

[build-dependencies]
mcpp-build = {{ path = "{repo}/mcpp-build" }}

[package.metadata.mcpp]
{meta.format(storage=storage)}
[workspace]
""")
    write(f"{d}/build.rs", "fn main() { mcpp_build::build(); }\n")
    get = ".unwrap()" if sidecar else ""
    body = "".join(f"    let p = shaders::{i}(){get}; n += p.size_bytes; x = sum(x, p.code);\n" for i in ids)
    write(f"{d}/src/main.rs", "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\n" + SUM.replace("{{", "{").replace("}}", "}") + "fn main() {\n    let (mut n, mut x) = (0usize, 0u32);\n" + body + "    println!(\"{n} {x}\");\n}\n")


# Every word is read through black_box: the optimizer cannot fold a payload away (the binary
# holds every byte, as a program handing them to a device would).
SUM = "fn sum(x: u32, words: &[u32]) -> u32 {{ std::hint::black_box(words).iter().fold(x, |a, w| a.rotate_left(1) ^ w) }}\n"

INCLUDE_MAIN = """mod shaders {{ {module} }}
""" + SUM + """fn main() {{
    let (mut n, mut x) = (0usize, 0u32);
{body}    println!("{{n}} {{x}}");
}}
"""

ACCESSOR = """#[repr(C, align(16))]
pub struct Aligned<T: ?Sized>(pub T);
pub fn words(b: &'static [u8]) -> &'static [u32] {
    // SAFETY: 16-byte aligned (Aligned), the length a whole number of words (SPIR-V).
    unsafe { core::slice::from_raw_parts(b.as_ptr() as *const u32, b.len() / 4) }
}
"""

INCLUDE_BUILD = r'''//! Hand-written: every shaders/*.comp compiled by glslangValidator (GLSLANG_VALIDATOR, else
//! PATH) into OUT_DIR, one thread a core, then a module of include_bytes! accessors.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let prog = std::env::var_os("GLSLANG_VALIDATOR").unwrap_or_else(|| "glslangValidator".into());
    println!("cargo:rerun-if-env-changed=GLSLANG_VALIDATOR");
    let release = std::env::var("PROFILE").map(|p| p == "release").unwrap_or(false);
    let mut names: Vec<String> = std::fs::read_dir("shaders").unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".comp")).collect();
    names.sort();
    println!("cargo:rerun-if-changed=shaders");
    for n in &names {
        println!("cargo:rerun-if-changed=shaders/{n}");
    }
    let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let per = names.len().div_ceil(jobs).max(1);
    std::thread::scope(|s| {
        for chunk in names.chunks(per) {
            let (prog, out) = (&prog, &out);
            s.spawn(move || {
                for n in chunk {
                    let mut c = Command::new(prog);
                    c.args(["-V", "--target-env", "vulkan1.2"]);
                    if release {
                        c.arg("-Os");
                    }
                    let st = c.arg("-o").arg(out.join(format!("{n}.spv"))).arg(format!("shaders/{n}")).status().unwrap();
                    assert!(st.success(), "glslangValidator failed on {n}");
                }
            });
        }
    });
    let mut m = String::from("pub mod support { include!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/support.rs\")); }\n");
    for n in &names {
        let id = n.replace('.', "_");
        let path = out.join(format!("{n}.spv"));
        m += &format!("pub fn {id}() -> &'static [u32] {{ static B: &support::Aligned<[u8]> = &support::Aligned(*include_bytes!({path:?})); support::words(&B.0) }}\n");
    }
    std::fs::write(out.join("shaders.rs"), m).unwrap();
}
'''


def main() -> None:
    args = sys.argv[1:]
    big = None
    if "--big" in args:
        at = args.index("--big")
        big = int(args[at + 1])
        del args[at:at + 2]
    work, n, repo = os.path.abspath(args[0]), int(args[1]), os.path.abspath(args[2])
    glslang = os.environ.get("REAL_GLSLANG", shutil.which("glslangValidator"))
    names = [f"s{i:03}.comp" for i in range(n)]
    ids = [x.replace(".", "_") for x in names]
    for form in ["header", "object", "sidecar"]:
        d = f"{work}/mcpp-{form}"
        mcpp_crate(d, f"sb-mcpp-{form}", form, repo, ids, form == "sidecar")
    for d in [f"{work}/mcpp-{f}" for f in ["header", "object", "sidecar"]] + [f"{work}/include-bytes"]:
        for i, name in enumerate(names):
            write(f"{d}/shaders/{name}", shader(i))
    d = f"{work}/include-bytes"
    write(f"{d}/Cargo.toml", "[package]\nname = \"sb-include-bytes\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n")
    write(f"{d}/build.rs", INCLUDE_BUILD)
    write(f"{d}/src/support.rs", ACCESSOR)
    body = "".join(f"    let p = shaders::{i}(); n += p.len() * 4; x = sum(x, p);\n" for i in ids)
    write(f"{d}/src/main.rs", INCLUDE_MAIN.format(module="include!(concat!(env!(\"OUT_DIR\"), \"/shaders.rs\"));", body=body))
    # The floor: SPIR-V compiled here once (the same argv as the release build above).
    d = f"{work}/prebuilt"
    write(f"{d}/Cargo.toml", "[package]\nname = \"sb-prebuilt\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n")
    write(f"{d}/src/support.rs", ACCESSOR)
    os.makedirs(f"{d}/spv", exist_ok=True)
    module = "pub mod support { include!(\"support.rs\"); }\n"
    for i, (name, id) in enumerate(zip(names, ids)):
        spv = f"{d}/spv/{name}.spv"
        if not os.path.exists(spv):
            src = f"{work}/include-bytes/shaders/{name}"
            subprocess.run([glslang, "-V", "--target-env", "vulkan1.2", "-Os", "-o", spv, src], check=True, stdout=subprocess.DEVNULL)
        module += f"    pub fn {id}() -> &'static [u32] {{ static B: &support::Aligned<[u8]> = &support::Aligned(*include_bytes!(\"../spv/{name}.spv\")); support::words(&B.0) }}\n"
    write(f"{d}/src/main.rs", INCLUDE_MAIN.format(module=module, body=body))
    # The same bytes as data files (tools-embed): no compiler in any of these builds.
    for form in ["header", "object", "sidecar"]:
        d = f"{work}/embed-{form}"
        mcpp_crate(d, f"sb-embed-{form}", form, repo, [x.replace(".comp", "_bin") for x in names], form == "sidecar", EMBED_META)
        for name in names:
            write_bytes(f"{d}/data/{name[:-5]}.bin", open(f"{work}/prebuilt/spv/{name}.spv", "rb").read())
    if big is not None:
        block = bytes((i * 131 + 7) % 256 for i in range(1 << 16))
        data = block * ((big << 20) // len(block)) + block[: (big << 20) % len(block)]
        for form in ["header", "object"]:
            d = f"{work}/big-{form}"
            mcpp_crate(d, f"sb-big-{form}", form, repo, ["big_bin"], False, EMBED_META)
            write_bytes(f"{d}/data/big.bin", data)
        d = f"{work}/big-include-bytes"
        write(f"{d}/Cargo.toml", "[package]\nname = \"sb-big-include-bytes\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n")
        write(f"{d}/src/support.rs", ACCESSOR)
        write_bytes(f"{d}/data/big.bin", data)
        module = "pub mod support { include!(\"support.rs\"); }\n    pub fn big_bin() -> &'static [u32] { static B: &support::Aligned<[u8]> = &support::Aligned(*include_bytes!(\"../data/big.bin\")); support::words(&B.0) }\n"
        write(f"{d}/src/main.rs", INCLUDE_MAIN.format(module=module, body="    let p = shaders::big_bin(); n += p.len() * 4; x = sum(x, p);\n"))


if __name__ == "__main__":
    main()
