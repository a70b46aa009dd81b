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
use safetensors::tensor::Metadata;

/// A header larger than this is not believed (the format's own limit).
const MAX_HEADER: u64 = 100 << 20;

/// The tensors of the file at `path` by name; `Ok(None)` when a tensor is of a type candle
/// does not have (the caller reads the file its general way). The header is read and
/// checked by the `safetensors` crate (offsets in order and back to back, each tensor's
/// bytes its shape times its type); the error says what in the file is wrong.
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
    let metadata: Metadata =
        serde_json::from_slice(&header).map_err(|e| format!("a bad header: {e}"))?;
    let base = 8 + header_len;
    let data_len = metadata.data_len() as u64;
    if base + data_len != file_len {
        return Err(format!(
            "the header names {data_len} bytes of tensors, the file holds {}",
            file_len - base
        ));
    }
    let mut tensors = HashMap::new();
    for (name, info) in metadata.tensors() {
        let Ok(dtype) = DType::try_from(info.dtype) else {
            return Ok(None);
        };
        let (start, end) = info.data_offsets;
        let at = base + start as u64;
        let tensor = if dtype == DType::F32 {
            // Zeroed memory is taken fresh from the system: the read is its first touch.
            let mut data = vec![0f32; (end - start) / 4];
            file.read_exact_at(bytemuck::cast_slice_mut(&mut data), at)
                .map_err(|e| format!("tensor {name}: {e}"))?;
            if cfg!(target_endian = "big") {
                for x in &mut data {
                    *x = f32::from_bits(u32::from_le(x.to_bits()));
                }
            }
            Tensor::from_vec(data, info.shape.as_slice(), device)
        } else {
            let mut bytes = vec![0u8; end - start];
            file.read_exact_at(&mut bytes, at)
                .map_err(|e| format!("tensor {name}: {e}"))?;
            Tensor::from_raw_buffer(&bytes, dtype, &info.shape, device)
        };
        let tensor = tensor.map_err(|e| format!("tensor {name}: {e}"))?;
        tensors.insert(name, tensor);
    }
    Ok(Some(tensors))
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
        bytes[at..at + 5].copy_from_slice(b"\"U16\"");
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
        assert!(err.contains("the file holds 396"), "{err}");
        // A shape that does not fit the tensor's bytes.
        let mut lying = bytes.clone();
        let header = String::from_utf8_lossy(&lying[8..]).into_owned();
        let at = 8 + header.find("[100]").unwrap();
        lying[at..at + 5].copy_from_slice(b"[101]");
        let lie = dir.path().join("lie.safetensors");
        std::fs::write(&lie, &lying).unwrap();
        let err = read_tensors(&lie, &Device::Cpu).unwrap_err();
        assert!(err.starts_with("a bad header"), "{err}");
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
