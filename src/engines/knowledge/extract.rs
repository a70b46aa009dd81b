//! File → text: UTF-8 text files as they are (CRLF made LF, a BOM dropped), PDFs through
//! `pdf-extract`. Whatever cannot be read as text gives a one-line reason, and the file is
//! skipped.

use std::path::{Path, PathBuf};

/// The text of the file at `path`, or why it has none: too large, binary, not UTF-8, a PDF
/// that cannot be read (broken, encrypted), or no text at all.
pub fn extract(path: &Path, max_bytes: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "too large ({} bytes; [knowledge] max_file_bytes is {max_bytes})",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = if is_pdf(path, &bytes) {
        pdf_text(&bytes)?
    } else {
        plain_text(bytes)?
    };
    if text.trim().is_empty() {
        return Err("no text".into());
    }
    Ok(text)
}

fn is_pdf(path: &Path, bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF-")
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
}

fn plain_text(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.contains(&0) {
        return Err("binary file (it holds NUL bytes)".into());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text.replace("\r\n", "\n"))
}

/// The text of a PDF. `pdf-extract` panics on some malformed files; a panic is a reason
/// like any other.
fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    let run = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes));
    let text = match run {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => return Err(format!("cannot read the PDF: {}", one_line(&e.to_string()))),
        Err(_) => return Err("cannot read the PDF: it is malformed".into()),
    };
    // Pages come separated by form feeds and runs of blank lines: keep paragraphs.
    let text = text.replace('\u{c}', "\n\n");
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out.trim().to_string())
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The files under `root` to read, sorted by path: `root` itself when it is a file, else
/// every regular file below it, skipping hidden files and folders (names starting with a
/// dot) and not following symbolic links to folders.
pub fn walk(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(root)?;
    if !meta.is_dir() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(path);
            } else if ty.is_file() || (ty.is_symlink() && path.is_file()) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn reads_text_and_gives_reasons_for_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("a.md"), "\u{feff}# Title\r\nBody\r\n").unwrap();
        assert_eq!(extract(&p("a.md"), 1000).unwrap(), "# Title\nBody\n");
        std::fs::write(p("b.bin"), [1u8, 0, 2, 3]).unwrap();
        assert!(extract(&p("b.bin"), 1000).unwrap_err().contains("binary"));
        std::fs::write(p("c.txt"), [b'a', 0xff, 0xfe]).unwrap();
        assert!(extract(&p("c.txt"), 1000).unwrap_err().contains("UTF-8"));
        std::fs::write(p("d.txt"), " \n\n ").unwrap();
        assert_eq!(extract(&p("d.txt"), 1000).unwrap_err(), "no text");
        std::fs::write(p("e.txt"), "x".repeat(20)).unwrap();
        assert!(extract(&p("e.txt"), 10).unwrap_err().contains("too large"));
        std::fs::write(p("f.pdf"), b"%PDF-1.4\n garbage \x01\x02 not a pdf").unwrap();
        assert!(extract(&p("f.pdf"), 1000).unwrap_err().contains("PDF"));
        assert!(extract(&p("missing.txt"), 1000).is_err());
    }

    #[test]
    fn reads_the_text_of_a_pdf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hello.pdf");
        std::fs::write(&path, minimal_pdf("Tidal locking keeps one face")).unwrap();
        let text = extract(&path, 1 << 20).unwrap();
        assert!(text.contains("Tidal locking keeps one face"), "{text:?}");
    }

    /// A one-page PDF showing `text` in Helvetica, with a correct cross-reference table.
    pub(crate) fn minimal_pdf(text: &str) -> Vec<u8> {
        let content = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>".to_string(),
            format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_string(),
        ];
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
        }
        let xref = out.len();
        out.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
        );
        for off in offsets {
            out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
        }
        out.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        out
    }
}
