//! A safetensors file read straight into the tensors' own memory: each `f32` tensor's bytes
//! go from the file into the vector the tensor then owns (a tensor of another type, such as
//! BERT's `i64` position ids, is read and copied). Reading the whole file into a buffer
//! first and copying every tensor out of it touched twice the memory (87 MB for
//! all-MiniLM-L6-v2, twice over), which was most of what loading the embedder cost.
//! Mapping the file would need `unsafe`.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use candle_core::{DType, Device, Tensor};

/// A header larger than this is not believed (the format allows 100 MB).
const MAX_HEADER: u64 = 100 << 20;

/// One tensor's entry in the header.
#[derive(serde::Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [u64; 2],
}

/// The tensors of the file at `path` by name; `Ok(None)` when a tensor is of a type this
/// does not know (the caller reads the file its general way). The error says what in the
/// file is wrong.
pub(super) fn read_tensors(
    path: &Path,
    device: &Device,
) -> Result<Option<HashMap<String, Tensor>>, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut len = [0u8; 8];
    file.read_exact_at(&mut len, 0)
        .map_err(|e| format!("cannot read the header's length: {e}"))?;
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER || header_len > file_len.saturating_sub(8) {
        return Err(format!(
            "a header of {header_len} bytes in a file of {file_len}"
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact_at(&mut header, 8)
        .map_err(|e| format!("cannot read the header: {e}"))?;
    let mut entries: HashMap<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| format!("the header is not JSON: {e}"))?;
    entries.remove("__metadata__");
    let mut parsed = Vec::with_capacity(entries.len());
    for (name, value) in entries {
        let entry: Entry = serde_json::from_value(value)
            .map_err(|e| format!("tensor {name}: not a tensor entry: {e}"))?;
        let Some(dtype) = dtype(&entry.dtype) else {
            return Ok(None);
        };
        parsed.push((name, dtype, entry));
    }
    let base = 8 + header_len;
    let mut tensors = HashMap::with_capacity(parsed.len());
    for (name, dtype, entry) in parsed {
        let [start, end] = entry.data_offsets;
        let size = dtype.size_in_bytes();
        let count = entry
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .filter(|n| n.checked_mul(size).is_some());
        let fits = count.is_some_and(|n| {
            start <= end && end - start == (n * size) as u64 && base.saturating_add(end) <= file_len
        });
        let (Some(count), true) = (count, fits) else {
            return Err(format!(
                "tensor {name}: bytes {start}..{end} do not hold its shape {:?} or lie past the end",
                entry.shape
            ));
        };
        if dtype != DType::F32 {
            let mut bytes = vec![0u8; count * size];
            file.read_exact_at(&mut bytes, base + start)
                .map_err(|e| format!("tensor {name}: {e}"))?;
            let tensor = Tensor::from_raw_buffer(&bytes, dtype, &entry.shape, device)
                .map_err(|e| format!("tensor {name}: {e}"))?;
            tensors.insert(name, tensor);
            continue;
        }
        // Zeroed memory is taken fresh from the system: the read is its first touch.
        let mut data = vec![0f32; count];
        file.read_exact_at(bytemuck::cast_slice_mut(&mut data), base + start)
            .map_err(|e| format!("tensor {name}: {e}"))?;
        if cfg!(target_endian = "big") {
            for x in &mut data {
                *x = f32::from_bits(u32::from_le(x.to_bits()));
            }
        }
        let tensor = Tensor::from_vec(data, entry.shape, device)
            .map_err(|e| format!("tensor {name}: {e}"))?;
        tensors.insert(name, tensor);
    }
    Ok(Some(tensors))
}

/// The tensor type a header names (safetensors' names), when candle has it.
fn dtype(name: &str) -> Option<DType> {
    Some(match name {
        "U8" => DType::U8,
        "U32" => DType::U32,
        "I64" => DType::I64,
        "BF16" => DType::BF16,
        "F16" => DType::F16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use candle_core::DType;

    use super::*;

    fn saved(dir: &Path, tensors: &[(&str, Tensor)]) -> std::path::PathBuf {
        let path = dir.join("model.safetensors");
        let map: HashMap<String, Tensor> = tensors
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect();
        candle_core::safetensors::save(&map, &path).unwrap();
        path
    }

    #[test]
    fn f32_tensors_read_back_as_the_general_reader_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let a = Tensor::arange(0f32, 24.0, &Device::Cpu)
            .unwrap()
            .reshape((2, 3, 4))
            .unwrap();
        let b = Tensor::new(&[-1.5f32, 0.25, 3.0e-8], &Device::Cpu).unwrap();
        let path = saved(dir.path(), &[("a.weight", a), ("b", b)]);
        let read = read_tensors(&path, &Device::Cpu).unwrap().unwrap();
        let general = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        assert_eq!(read.len(), 2);
        for (name, t) in &general {
            let mine = &read[name];
            assert_eq!(mine.dims(), t.dims(), "{name}");
            assert_eq!(
                mine.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                t.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn the_installed_models_tensors_equal_the_general_readers() {
        let Some(path) = crate::paths::default_models_dir()
            .map(|d| crate::models::minilm_dir(&d).join("model.safetensors"))
            .filter(|p| p.is_file())
        else {
            eprintln!("skipped: all-MiniLM-L6-v2 is not installed");
            return;
        };
        let read = read_tensors(&path, &Device::Cpu).unwrap().unwrap();
        let general = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        assert_eq!(read.len(), general.len());
        for (name, t) in &general {
            let mine = &read[name];
            assert_eq!((mine.dtype(), mine.dims()), (t.dtype(), t.dims()), "{name}");
            let equal = mine.eq(t).unwrap().flatten_all().unwrap().min(0).unwrap();
            assert_eq!(equal.to_scalar::<u8>().unwrap(), 1, "{name}");
        }
    }

    #[test]
    fn tensors_of_other_types_read_back_too() {
        let dir = tempfile::tempdir().unwrap();
        let half = Tensor::new(&[1f32, 2.5], &Device::Cpu)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        let ids = Tensor::new(&[[0i64, 1, 2]], &Device::Cpu).unwrap();
        let path = saved(dir.path(), &[("h", half), ("position_ids", ids)]);
        let read = read_tensors(&path, &Device::Cpu).unwrap().unwrap();
        assert_eq!(read["h"].dtype(), DType::F16);
        assert_eq!(
            read["h"]
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec1::<f32>()
                .unwrap(),
            [1.0, 2.5]
        );
        assert_eq!(read["position_ids"].to_vec2::<i64>().unwrap(), [[0, 1, 2]]);
        // A type candle does not have is left to the general reader.
        let mut bytes = std::fs::read(&path).unwrap();
        let header = String::from_utf8_lossy(&bytes[8..]).into_owned();
        let at = 8 + header.find("\"F16\"").unwrap();
        bytes[at..at + 5].copy_from_slice(b"\"F8_\"");
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_tensors(&path, &Device::Cpu).unwrap().is_none());
    }

    #[test]
    fn a_cut_or_lying_file_is_an_error_that_says_what() {
        let dir = tempfile::tempdir().unwrap();
        let t = Tensor::arange(0f32, 100.0, &Device::Cpu).unwrap();
        let path = saved(dir.path(), &[("t", t)]);
        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.path().join("cut.safetensors");
        std::fs::write(&cut, &bytes[..bytes.len() - 4]).unwrap();
        let err = read_tensors(&cut, &Device::Cpu).unwrap_err();
        assert!(
            err.contains("tensor t") && err.contains("past the end"),
            "{err}"
        );
        let short = dir.path().join("short.safetensors");
        std::fs::write(&short, b"garbage").unwrap();
        let err = read_tensors(&short, &Device::Cpu).unwrap_err();
        assert!(err.contains("header's length"), "{err}");
        let huge = dir.path().join("huge.safetensors");
        std::fs::write(&huge, u64::MAX.to_le_bytes()).unwrap();
        let err = read_tensors(&huge, &Device::Cpu).unwrap_err();
        assert!(err.contains("a header of"), "{err}");
    }
}
