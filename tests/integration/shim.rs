//! The recording compiler `mcpp-shim` itself (the harness's [`Shim`]): it refuses to run outside
//! the tests, records each start (program name, argv, cwd, environment), writes the outputs and
//! depfiles a command line names, answers probes as told, fails on request and wraps real programs.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::process::Command;

/// Run `program` with `args` in `cwd`, with `env` set.
fn run(
    program: &std::path::Path,
    args: &[&str],
    cwd: &std::path::Path,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut c = Command::new(program);
    c.args(args).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn outside_the_tests_it_refuses_with_exit_2_and_records_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("nvcc");
    copy_executable(&shim_binary(), &bare);
    std::fs::write(tmp.path().join("k.cu"), "").unwrap();
    let mut c = Command::new(&bare);
    c.args(["-c", "k.cu", "-o", "k.o"]).current_dir(tmp.path());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MCPP_SHIM_") {
            c.env_remove(k);
        }
    }
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.starts_with("nvcc (mcpp-shim): this is cargo-mcpp's recording compiler for its own tests, and it runs only inside them."), "{t}");
    assert!(t.contains("MCPP_SHIM_LOG"), "{t}");
    assert!(!tmp.path().join("k.o").exists(), "nothing written");
    // The environment variable alone lets it run (the sidecar is the harness's way, not the only one).
    let log = tmp.path().join("log");
    let out = run(
        &bare,
        &["-c", "k.cu", "-o", "k.o"],
        tmp.path(),
        &[("MCPP_SHIM_LOG", log.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(log.join("records.jsonl"))
            .unwrap()
            .lines()
            .count(),
        1
    );
}

#[test]
fn each_start_is_recorded_with_its_program_name_argv_cwd_and_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let icpx = Shim::install(&tmp.path().join("bin"), "icpx");
    let bisheng = Shim::install(&tmp.path().join("bin"), "bisheng");
    std::fs::create_dir_all(tmp.path().join("src")).unwrap();
    std::fs::write(tmp.path().join("src/k.cpp"), "").unwrap();
    let out = run(
        icpx.path(),
        &["-fsycl", "-c", "k.cpp", "-o", "../obj/k.o"],
        &tmp.path().join("src"),
        &[("SYCL_PROBE", "on")],
    );
    assert!(out.status.success(), "{}", text(&out));
    run(icpx.path(), &["--version"], tmp.path(), &[]);
    assert_eq!(
        (icpx.starts(), bisheng.starts()),
        (2, 0),
        "each copy counts its own starts"
    );
    let r = &icpx.records()[0];
    assert_eq!(r.program, "icpx");
    assert_eq!(r.args, ["-fsycl", "-c", "k.cpp", "-o", "../obj/k.o"]);
    assert_eq!(r.cwd, tmp.path().join("src"));
    assert_eq!(r.env.get("SYCL_PROBE").map(String::as_str), Some("on"));
    assert_eq!(r.after("-o"), Some("../obj/k.o"));
    assert!(r.has("-fsycl") && r.names("k.cpp") && !r.is_probe());
    assert!(icpx.records()[1].is_probe());
    assert_eq!(
        icpx.argvs(),
        [vec!["-fsycl", "-c", "k.cpp", "-o", "../obj/k.o"]],
        "probes are not calls"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("obj/k.o")).unwrap(),
        "\x7fELF object of k.cpp\n",
        "an object starts as an ELF file"
    );
}

#[test]
fn outputs_and_depfiles_are_written_for_every_spelling() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(tmp.path(), "compiler");
    std::fs::write(tmp.path().join("a.slang"), "").unwrap();
    for (flag, n) in [("-MF", 1), ("--depfile", 2), ("-depfile", 3)] {
        let out_file = format!("out{n}/a.spv");
        let dep = format!("dep{n}/a.d");
        let out = run(
            shim.path(),
            &["-target", "spirv", "a.slang", "-o", &out_file, flag, &dep],
            tmp.path(),
            &[],
        );
        assert!(out.status.success(), "{flag}: {}", text(&out));
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&out_file)).unwrap(),
            "object of a.slang\n",
            "{flag}"
        );
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(&dep)).unwrap(),
            format!("{out_file}: a.slang\n"),
            "{flag}"
        );
    }
    let out = run(
        shim.path(),
        &["a.slang", "-o", "eq.spv", "--depfile=eq.d"],
        tmp.path(),
        &[],
    );
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("eq.d")).unwrap(),
        "eq.spv: a.slang\n"
    );
    // The output's content can be told (SPIR-V words, say).
    shim.output("\u{3}\u{2}\u{23}\u{7}");
    run(shim.path(), &["a.slang", "-o", "told.spv"], tmp.path(), &[]);
    assert_eq!(
        std::fs::read(tmp.path().join("told.spv")).unwrap(),
        [3, 2, 0x23, 7]
    );
}

#[test]
fn probes_are_answered_as_told() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(tmp.path(), "dpcpp");
    let out = run(shim.path(), &["--version"], tmp.path(), &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "dpcpp (mcpp recording shim) 1.0\n"
    );
    shim.answer_version("Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)")
        .answer_help("USAGE: dpcpp [options] file...");
    for flag in ["--version", "-V"] {
        let out = run(shim.path(), &[flag], tmp.path(), &[]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)\n",
            "{flag}"
        );
    }
    let out = run(shim.path(), &["--help"], tmp.path(), &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "USAGE: dpcpp [options] file...\n"
    );
    assert_eq!(shim.starts(), 4);
    assert!(shim.calls().is_empty());
    // `-V` among other arguments is no probe (glslangValidator's `-V` means "SPIR-V").
    std::fs::write(tmp.path().join("x.comp"), "").unwrap();
    let out = run(
        shim.path(),
        &["-V", "x.comp", "-o", "x.spv"],
        tmp.path(),
        &[],
    );
    assert!(
        out.stdout.is_empty() && tmp.path().join("x.spv").is_file(),
        "{}",
        text(&out)
    );
    assert_eq!(shim.argvs(), [vec!["-V", "x.comp", "-o", "x.spv"]]);
}

#[test]
fn it_fails_on_request_with_the_message_and_code_and_still_answers_probes() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(tmp.path(), "bisheng");
    std::fs::write(tmp.path().join("k.cce"), "").unwrap();
    shim.fail_with("k.cce:3:1: error: simulated", 7);
    let out = run(shim.path(), &["-c", "k.cce", "-o", "k.o"], tmp.path(), &[]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "k.cce:3:1: error: simulated\n"
    );
    assert!(
        !tmp.path().join("k.o").exists(),
        "a failed start writes nothing"
    );
    assert!(
        run(shim.path(), &["--version"], tmp.path(), &[])
            .status
            .success(),
        "probes still answer"
    );
    assert_eq!(shim.starts(), 2, "failed starts are recorded too");

    let only = Shim::install(tmp.path(), "only-sm90");
    only.fail_if_arg("--offload-arch=sm_90", "no sm_90 here", 3);
    assert!(
        run(only.path(), &["-c", "k.cce", "-o", "a.o"], tmp.path(), &[])
            .status
            .success()
    );
    assert_eq!(
        run(
            only.path(),
            &["--offload-arch=sm_90", "-c", "k.cce", "-o", "b.o"],
            tmp.path(),
            &[]
        )
        .status
        .code(),
        Some(3)
    );
}

#[test]
fn a_success_can_print_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(tmp.path(), "nvcc");
    shim.warn("k.cu(3): warning #177-D: variable \"x\" was declared but never referenced");
    let out = run(shim.path(), &["-o", "k.o"], tmp.path(), &[]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning #177-D"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_wrapper_records_and_runs_the_real_program_with_the_same_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let echo = Shim::wrap(tmp.path(), "echo", &real_tool("echo"));
    let out = run(echo.path(), &["one", "two words"], tmp.path(), &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one two words\n");
    let fails = Shim::wrap(tmp.path(), "false", &real_tool("false"));
    assert_eq!(
        run(fails.path(), &[], tmp.path(), &[]).status.code(),
        Some(1),
        "the real program's exit code"
    );
    assert_eq!(echo.argvs(), [vec!["one", "two words"]]);
    assert_eq!(fails.starts(), 1);
}

#[test]
fn found_on_path_by_its_bare_name_it_finds_its_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(&tmp.path().join("bin"), "icpx");
    shim.answer_version("icpx 2025.0");
    let path = std::env::join_paths(std::iter::once(tmp.path().join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = Command::new("icpx")
        .arg("--version")
        .env("PATH", path)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "icpx 2025.0\n",
        "{}",
        text(&out)
    );
    assert_eq!(shim.records()[0].argv0, "icpx");
}

#[test]
fn digest_outputs_follow_the_inputs_and_what_they_include_and_silent_starts_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = Shim::install(&tmp.path().join("bin"), "icpx");
    shim.digest_inputs();
    std::fs::create_dir_all(tmp.path().join("inc")).unwrap();
    std::fs::write(tmp.path().join("k.sycl"), "#include \"h.h\"\n").unwrap();
    std::fs::write(tmp.path().join("inc/h.h"), "#include \"g.h\"\n").unwrap();
    std::fs::write(tmp.path().join("inc/g.h"), "1\n").unwrap();
    let compile = || {
        let o = run(
            shim.path(),
            &[
                "-Iinc", "-MD", "-MF", "k.d", "-x", "c++", "-c", "k.sycl", "-o", "k.o",
            ],
            tmp.path(),
            &[],
        );
        assert!(o.status.success(), "{}", text(&o));
        std::fs::read(tmp.path().join("k.o")).unwrap()
    };
    let first = compile();
    assert!(
        first.starts_with(b"\x7fELF ") && String::from_utf8_lossy(&first).contains("digest "),
        "{}",
        String::from_utf8_lossy(&first)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("k.d")).unwrap(),
        "k.o: k.sycl inc/h.h inc/g.h\n",
        "the depfile lists what was included, transitively"
    );
    assert_eq!(compile(), first, "the same bytes in, the same bytes out");
    std::fs::write(tmp.path().join("inc/g.h"), "2\n").unwrap();
    assert_ne!(
        compile(),
        first,
        "an edit two includes deep changes the output"
    );
    shim.silent_unless_args("-x c++");
    std::fs::remove_file(tmp.path().join("k.o")).unwrap();
    let o = run(shim.path(), &["-c", "k.sycl", "-o", "k.o"], tmp.path(), &[]);
    assert!(
        o.status.success() && !tmp.path().join("k.o").exists(),
        "exit 0, nothing written: {}",
        text(&o)
    );
    assert!(
        compile().starts_with(b"\x7fELF "),
        "with the sequence it compiles"
    );
}
