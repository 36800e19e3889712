//! `cargo xtask bench-bundle DIR`: the benchmark as a directory that runs on a machine without a
//! Rust toolchain, network or Redis, and brings its figures back.
//!
//! It builds `asynq-bench` and `xtask` in release mode and copies them, stripped, into `DIR/bin`
//! with the `redis-server` the tests use (`ASYNQ_REDIS_SERVER_BIN` or `PATH`), the other queues'
//! peers (`xtask/other-peers`) and, where Go builds it, Go asynq's peer; the shared
//! libraries they link (`ldd`) into `DIR/lib`, the vDSO and the loader left out, the loader
//! into `DIR/loader`; and writes `DIR/run.sh`, which runs `xtask bench --bin-dir` there with
//! `LD_LIBRARY_PATH` at `DIR/lib` (or, where this machine's loader cannot run the bundled C
//! library, every program through the bundled loader) and writes the report to an output
//! directory. The bundle stays under [`MAX_BUNDLE_BYTES`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use crate::bench::{Others, Peer, PeerKind};
use crate::{cmd, redis, step};

/// The most a bundle may weigh.
const MAX_BUNDLE_BYTES: u64 = 64 * 1024 * 1024;

/// The programs every bundle carries, by their names in `DIR/bin`; the peers join them.
const PROGRAMS: [&str; 3] = ["asynq-bench", "xtask", "redis-server"];

/// Parses the arguments after `bench-bundle`: the bundle's directory.
pub(crate) fn parse_args(args: &[String]) -> anyhow::Result<PathBuf> {
    match args {
        [dir] if !dir.starts_with('-') => Ok(PathBuf::from(dir)),
        _ => bail!("`bench-bundle` takes one argument, the bundle's directory; got {args:?}"),
    }
}

/// Builds the bundle into `dir`.
pub(crate) fn run(dir: &Path) -> anyhow::Result<()> {
    let redis_server = redis::ensure()?;
    cmd::run(&mut cmd::cargo_command([
        "build",
        "--release",
        "-p",
        "asynq-bench",
        "--bin",
        "asynq-bench",
        "-p",
        "xtask",
        "--bin",
        "xtask",
    ]))?;
    let target = crate::bench::target_dir();
    let release = target.join("release");
    let mut programs: Vec<(&str, PathBuf)> =
        PROGRAMS.into_iter().zip([release.join("asynq-bench"), release.join("xtask"), redis_server]).collect();
    let others = Others::build(target.join("bench/other-peers"))?;
    programs.push((Others::BINARY, others.binary().to_owned()));
    match Peer::build(PeerKind::GoAsynq, target.join("bench/go-peer")) {
        Ok(go) => programs.push((Peer::GO_BINARY, go.binary().to_owned())),
        Err(e) => step(format_args!("the bundle carries no Go peer (run.sh's GO=1 will say so): {e:#}")),
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for part in ["bin", "lib", "loader"] {
        let path = dir.join(part);
        if path.exists() {
            std::fs::remove_dir_all(&path).with_context(|| format!("cannot empty {}", path.display()))?;
        }
        std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
    }
    let mut libraries = BTreeMap::new();
    let mut loader = None;
    for (name, source) in &programs {
        let copy = dir.join("bin").join(name);
        std::fs::copy(source, &copy)
            .with_context(|| format!("cannot copy {} to {}", source.display(), copy.display()))?;
        cmd::run(Command::new("strip").arg(&copy)).context("stripping needs `strip` (binutils)")?;
        let linked = linked(source)?;
        libraries.extend(linked.libraries);
        loader = loader.or(linked.loader);
    }
    for (name, path) in &libraries {
        let copy = dir.join("lib").join(name);
        std::fs::copy(path, &copy).with_context(|| format!("cannot copy {} to {}", path.display(), copy.display()))?;
    }
    if let Some(loader) = &loader {
        let name = loader.file_name().context("the loader's path has no file name")?;
        std::fs::copy(loader, dir.join("loader").join(name))
            .with_context(|| format!("cannot copy the loader {}", loader.display()))?;
    }
    write_executable(&dir.join("run.sh"), RUN_SH)?;
    std::fs::write(dir.join("COMMIT"), commit() + "\n").context("cannot write COMMIT")?;
    let bytes = size_of(dir)?;
    if bytes > MAX_BUNDLE_BYTES {
        bail!(
            "the bundle in {} weighs {} MiB, over the {} MiB it may",
            dir.display(),
            bytes >> 20,
            MAX_BUNDLE_BYTES >> 20
        );
    }
    step(format_args!(
        "wrote {} ({:.1} MiB: {} programs, {} libraries); on the target machine run `{}/run.sh OUT_DIR` and bring \
         OUT_DIR back",
        dir.display(),
        bytes as f64 / (1024.0 * 1024.0),
        programs.len(),
        libraries.len(),
        dir.display()
    ));
    Ok(())
}

/// What a program links: its shared libraries by the names it asks for, and the loader.
#[derive(Debug, Default, PartialEq)]
struct Linked {
    libraries: BTreeMap<String, PathBuf>,
    loader: Option<PathBuf>,
}

/// Asks `ldd` what `program` links.
fn linked(program: &Path) -> anyhow::Result<Linked> {
    let output = Command::new("ldd")
        .arg(program)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not run `ldd {}`", program.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() && !text.contains("statically linked") {
        bail!("`ldd {}` failed: {}", program.display(), String::from_utf8_lossy(&output.stderr).trim());
    }
    parse_ldd(&text).with_context(|| format!("reading what {} links", program.display()))
}

/// Reads `ldd`'s output: `name => /path (0x…)` lines are libraries; a line that starts with a
/// path is the loader; the vDSO (`linux-vdso.so.1 (0x…)`, no path) and `statically linked` name
/// nothing to copy. A library `not found` is an error.
fn parse_ldd(text: &str) -> anyhow::Result<Linked> {
    let mut linked = Linked::default();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let without_address = line.rsplit_once(" (0x").map_or(line, |(before, _)| before).trim();
        match without_address.split_once("=>") {
            Some((name, path)) => {
                let (name, path) = (name.trim(), path.trim());
                if path == "not found" {
                    bail!("{name} is not found");
                }
                if !path.is_empty() {
                    linked.libraries.insert(name.to_owned(), PathBuf::from(path));
                }
            }
            None if without_address.starts_with('/') => linked.loader = Some(PathBuf::from(without_address)),
            None => {}
        }
    }
    Ok(linked)
}

/// Writes `text` to `path`, executable.
fn write_executable(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// The commit the bundle was built from, marked when the work tree had changes.
fn commit() -> String {
    let git = |args: &[&str]| {
        let output = Command::new("git").args(args).current_dir(crate::workspace_root()).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    match (git(&["rev-parse", "HEAD"]), git(&["status", "--porcelain"])) {
        (Some(commit), Some(changes)) if !changes.is_empty() => format!("{commit} with uncommitted changes"),
        (Some(commit), _) => commit,
        (None, _) => "unknown".to_owned(),
    }
}

/// The bytes of the files under `dir`.
fn size_of(dir: &Path) -> anyhow::Result<u64> {
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        bytes += if kind.is_dir() { size_of(&entry.path())? } else { entry.metadata()?.len() };
    }
    Ok(bytes)
}

/// The bundle's `run.sh`.
const RUN_SH: &str = r#"#!/bin/sh
# The asynq benchmark, bundled by `cargo xtask bench-bundle` from the commit in COMMIT: runs
# without a Rust toolchain, network or Redis installed.
#
#   ./run.sh [OUT_DIR [more `xtask bench` flags...]]
#
# Writes OUT_DIR/report.md, report.json, log.txt and machine.txt (default OUT_DIR:
# ./out-<UTC time>). Sizes, from the environment: TASKS (tasks per throughput scenario, and per
# master on the masters axis; default 200000), RUNS (3), MASTERS (1,2,4,8), WORKERS_PER_MASTER (1),
# ONLY (sharded-drain,enqueue,baseline-redis-ping: the masters axis, the enqueue scenarios, one
# at a time among them, and the round-trip baselines). GO=1 runs Go asynq's peer beside them and
# OTHERS=1 apalis and rusty-sidekiq (`--go`, `--others`), each where the bundle carries it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/out-$(date -u +%Y%m%dT%H%M%SZ)"}
[ $# -gt 0 ] && shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$here/bin
lib=$here/lib

# The bundled libraries under this machine's loader when it runs them (the same C library);
# otherwise every program through the bundled loader.
if [ -z "${BUNDLE_LOADER:-}" ] \
    && LD_LIBRARY_PATH=$lib "$bin/redis-server" --version >/dev/null 2>&1 \
    && LD_LIBRARY_PATH=$lib "$bin/asynq-bench" --version >/dev/null 2>&1 \
    && LD_LIBRARY_PATH=$lib "$bin/xtask" help >/dev/null 2>&1; then
    programs=$bin
    how="LD_LIBRARY_PATH=$lib"
else
    loader=$(ls "$here"/loader/* | head -n 1)
    programs=$out/programs
    mkdir -p "$programs"
    for path in "$bin"/*; do
        program=$(basename "$path")
        printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$lib" "$path" >"$programs/$program"
        chmod +x "$programs/$program"
    done
    how="the bundled loader $loader"
fi

{
    echo "commit: $(cat "$here/COMMIT")"
    echo "date: $(date -u)"
    echo "kernel: $(uname -srm)"
    echo "cpus: $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo unknown)"
    echo "load before: $(cat /proc/loadavg 2>/dev/null || echo unknown)"
    echo "programs run with: $how"
} >"$out/machine.txt"

peers=""
if [ -n "${GO:-}" ]; then
    [ -e "$bin/go-asynq-peer" ] || { echo "GO=1: this bundle carries no Go peer" >&2; exit 2; }
    peers="$peers --go"
fi
if [ -n "${OTHERS:-}" ]; then
    [ -e "$bin/other-peers" ] || { echo "OTHERS=1: this bundle carries no other-peers" >&2; exit 2; }
    peers="$peers --others"
fi

bench() {
    if [ "$programs" = "$bin" ]; then
        LD_LIBRARY_PATH=$lib ASYNQ_REDIS_SERVER_BIN=$programs/redis-server "$programs/xtask" "$@"
    else
        ASYNQ_REDIS_SERVER_BIN=$programs/redis-server "$programs/xtask" "$@"
    fi
}

{
    status=0
    bench bench --bin-dir "$programs" --out "$out" \
        --only "${ONLY:-sharded-drain,enqueue,baseline-redis-ping}" --masters "${MASTERS:-1,2,4,8}" \
        --workers-per-master "${WORKERS_PER_MASTER:-1}" --tasks "${TASKS:-200000}" --runs "${RUNS:-3}" $peers "$@" 2>&1 \
        || status=$?
    echo "$status" >"$out/status"
} | tee "$out/log.txt"
echo "load after: $(cat /proc/loadavg 2>/dev/null || echo unknown)" >>"$out/machine.txt"
status=$(cat "$out/status")
[ "$status" = 0 ] && echo "figures in $out (report.md, report.json); bring the directory back"
exit "$status"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libraries_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007fa0)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fa1)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007fa2)\n";
        let linked = parse_ldd(text).unwrap();
        assert_eq!(
            linked.libraries,
            BTreeMap::from([
                ("libc.so.6".to_owned(), PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")),
                ("libm.so.6".to_owned(), PathBuf::from("/lib/x86_64-linux-gnu/libm.so.6")),
            ])
        );
        assert_eq!(linked.loader, Some(PathBuf::from("/lib64/ld-linux-x86-64.so.2")));
        assert_eq!(parse_ldd("\tstatically linked\n").unwrap(), Linked::default());
        assert_eq!(parse_ldd("\tlinux-vdso.so.1 =>  (0x00007ffd)\n").unwrap(), Linked::default());
        let missing = parse_ldd("\tlibgone.so.1 => not found\n").unwrap_err();
        assert!(missing.to_string().contains("libgone.so.1"), "{missing}");
    }

    #[test]
    fn one_directory_is_the_argument() {
        assert_eq!(parse_args(&["out/bundle".to_owned()]).unwrap(), PathBuf::from("out/bundle"));
        assert!(parse_args(&[]).is_err());
        assert!(parse_args(&["a".to_owned(), "b".to_owned()]).is_err());
        assert!(parse_args(&["--quick".to_owned()]).is_err());
    }

    #[test]
    fn run_sh_runs_the_bench_from_the_bundle_with_its_libraries() {
        assert!(RUN_SH.starts_with("#!/bin/sh\n"));
        for needed in [
            "--bin-dir",
            "--out",
            "LD_LIBRARY_PATH=$lib",
            "--library-path",
            "sharded-drain",
            "1,2,4,8",
            "--go",
            "--others",
        ] {
            assert!(RUN_SH.contains(needed), "run.sh lacks {needed}");
        }
        let mut commands = RUN_SH.lines().filter(|line| !line.trim_start().starts_with('#'));
        assert!(commands.all(|line| !line.contains("cargo")), "the bundle runs without cargo");
    }
}
