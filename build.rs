//! Link settings of the `glassbox` binary.
//!
//! On Linux its relative relocations are packed (`DT_RELR`): the binary carries about
//! 90,000 of them (llama.cpp's C++ and the Rust code's tables), which the dynamic loader
//! otherwise reads as 2 MB of `RELA` entries and applies one by one on every start, a
//! measurable share of a short command such as `sessions list`. Packed, they are a few
//! kilobytes applied in a tight loop. Needs GNU ld 2.38 or lld, and glibc 2.36 to run.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
