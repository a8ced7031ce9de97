//! The PCD reader on small files written here: the three data layouts agree, odd field
//! types work, and hostile headers are errors without large allocations.

use streamwire_msgs::{PcdError, PointCloud, PointCloudError, PointDatatype};

/// Three points of `x y z` (F4) `label` (U2) `rgb` (F4 holding colour bits) `n` (I1 x2).
const POINTS: [([f32; 3], u16, u32, [i8; 2]); 3] = [
    ([1.0, 2.0, 3.0], 7, 0x00FF_8000, [-1, 2]),
    ([-0.5, 0.25, f32::NAN], 65535, 0x0000_00FF, [127, -128]),
    ([1e-3, 4.5e6, -7.0], 0, 0x0012_3456, [0, 0]),
];

fn header(data: &str, width: u32, height: u32) -> String {
    format!(
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z label rgb n\n\
         SIZE 4 4 4 2 4 1\nTYPE F F F U F I\nCOUNT 1 1 1 1 1 2\nWIDTH {width}\nHEIGHT {height}\n\
         VIEWPOINT 0 0 0 1 0 0 0\nPOINTS {}\nDATA {data}\n",
        width * height
    )
}

/// Point bytes as PCL lays out binary data: x y z label rgb n n = 20 bytes.
fn point_bytes(point: &([f32; 3], u16, u32, [i8; 2])) -> Vec<u8> {
    let (xyz, label, rgb, n) = point;
    let mut out = Vec::new();
    for v in xyz {
        out.extend(v.to_le_bytes());
    }
    out.extend(label.to_le_bytes());
    out.extend(f32::from_bits(*rgb).to_le_bytes());
    out.extend(n.map(|v| v as u8));
    out
}

fn ascii_file() -> Vec<u8> {
    let mut text = header("ascii", 3, 1);
    for (xyz, label, rgb, n) in POINTS {
        // PCL writes the packed rgb float in scientific notation; `{:e}` round-trips f32.
        let rgb = f32::from_bits(rgb);
        text.push_str(&format!(
            "{} {} {} {label} {rgb:e} {} {}\n",
            xyz[0], xyz[1], xyz[2], n[0], n[1]
        ));
    }
    text.into_bytes()
}

fn binary_file() -> Vec<u8> {
    let mut bytes = header("binary", 3, 1).into_bytes();
    for point in &POINTS {
        bytes.extend(point_bytes(point));
    }
    bytes
}

/// binary_compressed: columns (all x, all y, ...), LZF, prefixed with both sizes.
fn compressed_file(width: u32, height: u32, points: &[([f32; 3], u16, u32, [i8; 2])]) -> Vec<u8> {
    let rows: Vec<Vec<u8>> = points.iter().map(point_bytes).collect();
    let mut columns = Vec::new();
    for (start, len) in [(0, 4), (4, 4), (8, 4), (12, 2), (14, 4), (18, 2)] {
        for row in &rows {
            columns.extend(&row[start..start + len]);
        }
    }
    let lzf = lzf::compress(&columns).expect("compressible");
    let mut bytes = header("binary_compressed", width, height).into_bytes();
    bytes.extend((lzf.len() as u32).to_le_bytes());
    bytes.extend((columns.len() as u32).to_le_bytes());
    bytes.extend(lzf);
    bytes
}

fn check(cloud: &PointCloud) {
    assert_eq!(
        (cloud.width(), cloud.height(), cloud.point_step()),
        (3, 1, 20)
    );
    let datatypes: Vec<_> = cloud
        .fields()
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.datatype, f.count))
        .collect();
    assert_eq!(
        datatypes,
        [
            ("x", 0, PointDatatype::Float32, 1),
            ("y", 4, PointDatatype::Float32, 1),
            ("z", 8, PointDatatype::Float32, 1),
            ("label", 12, PointDatatype::Uint16, 1),
            ("rgb", 14, PointDatatype::Float32, 1),
            ("n", 18, PointDatatype::Int8, 2),
        ]
    );
    assert!(!cloud.is_dense(), "one z is NaN");
    let xyz: Vec<[f32; 3]> = cloud.xyz().expect("xyz").collect();
    for (got, (want, ..)) in xyz.iter().zip(&POINTS) {
        for (g, w) in got.iter().zip(want) {
            assert!(g == w || (g.is_nan() && w.is_nan()), "{got:?} vs {want:?}");
        }
    }
    let labels: Vec<u16> = cloud.values("label").expect("label").collect();
    assert_eq!(labels, [7, 65535, 0]);
    let rgb: Vec<u32> = cloud
        .values::<f32>("rgb")
        .expect("rgb")
        .map(f32::to_bits)
        .collect();
    assert_eq!(rgb, [0x00FF_8000, 0x0000_00FF, 0x0012_3456]);
    let n: Vec<i8> = cloud.values("n").expect("n").collect();
    assert_eq!(n, [-1, 127, 0], "first value of each point");
    assert_eq!(
        cloud.point(1, 0).map(|p| [p[18], p[19]]),
        Some([127, (-128i8) as u8])
    );
}

#[test]
fn ascii_binary_and_compressed_files_read_the_same_cloud() {
    let ascii = PointCloud::from_pcd(&ascii_file()).expect("ascii");
    let binary = PointCloud::from_pcd(&binary_file()).expect("binary");
    let compressed = PointCloud::from_pcd(&compressed_file(3, 1, &POINTS)).expect("compressed");
    check(&ascii);
    check(&binary);
    check(&compressed);
    assert_eq!(binary, compressed);
    assert_eq!(ascii.data(), binary.data());
}

#[test]
fn organized_compressed_cloud_keeps_its_grid() {
    let points: Vec<_> = (0..6u16)
        .map(|i| ([f32::from(i), 0.0, 1.0], i, 0, [0, 0]))
        .collect();
    let cloud = PointCloud::from_pcd(&compressed_file(3, 2, &points)).expect("organized");
    assert_eq!(
        (cloud.width(), cloud.height(), cloud.row_step()),
        (3, 2, 60)
    );
    assert!(cloud.is_dense());
    // Point (u, v) is pixel (u, v): index v * width + u.
    let x = |u, v| {
        cloud
            .point(u, v)
            .map(|p| f32::from_le_bytes([p[0], p[1], p[2], p[3]]))
    };
    assert_eq!(x(2, 1), Some(5.0));
    assert_eq!(x(0, 1), Some(3.0));
}

#[test]
fn padding_fields_keep_their_bytes_but_leave_the_field_list() {
    let pcd = b"VERSION 0.7\nFIELDS x _ y\nSIZE 4 1 4\nTYPE F U F\nCOUNT 1 4 1\nWIDTH 1\n\
                HEIGHT 1\nPOINTS 1\nDATA ascii\n1.5 0 0 0 0 2.5\n";
    let cloud = PointCloud::from_pcd(pcd).expect("padding field");
    assert_eq!(cloud.point_step(), 12);
    let names: Vec<_> = cloud
        .fields()
        .iter()
        .map(|f| (f.name.as_str(), f.offset))
        .collect();
    assert_eq!(names, [("x", 0), ("y", 8)]);
    assert_eq!(
        cloud.values::<f32>("y").expect("y").collect::<Vec<_>>(),
        [2.5]
    );
}

fn error(pcd: &[u8]) -> PcdError {
    PointCloud::from_pcd(pcd).expect_err("should be refused")
}

#[test]
fn bad_and_hostile_files_are_errors() {
    assert_eq!(error(b""), PcdError::NoData);
    assert_eq!(error(b"VERSION 0.7\nFIELDS x\n"), PcdError::NoData);
    assert!(matches!(
        error(b"\xFF\xFE\n"),
        PcdError::NotText { line: 1 }
    ));
    assert_eq!(
        error(b"SIZE 4\nTYPE F\nWIDTH 1\nDATA ascii\n1\n"),
        PcdError::Missing { key: "FIELDS" }
    );
    assert!(matches!(
        error(b"FIELDS x y\nSIZE 4\nTYPE F F\nWIDTH 1\nDATA ascii\n1 2\n"),
        PcdError::FieldCount {
            key: "SIZE",
            expected: 2,
            found: 1
        }
    ));
    assert!(matches!(
        error(b"FIELDS x\nSIZE 8\nTYPE U\nWIDTH 1\nDATA ascii\n1\n"),
        PcdError::UnsupportedType { .. }
    ));
    assert!(matches!(
        error(b"FIELDS x\nSIZE 4\nTYPE F\nWIDTH 2\nHEIGHT 2\nPOINTS 3\nDATA ascii\n1 2 3\n"),
        PcdError::PointCount {
            points: 3,
            width: 2,
            height: 2
        }
    ));
    assert!(matches!(
        error(b"FIELDS x\nSIZE 4\nTYPE F\nWIDTH 1\nDATA lzma\n"),
        PcdError::UnknownData(_)
    ));
    assert!(matches!(
        error(b"FIELDS x\nSIZE 4\nTYPE F\nCOUNT 0\nWIDTH 1\nDATA ascii\n1\n"),
        PcdError::BadValue { key: "COUNT", .. }
    ));
    assert!(matches!(
        error(b"FIELDS\nSIZE\nTYPE\nWIDTH 4000000000\nHEIGHT 4000000000\nDATA ascii\n"),
        PcdError::BadValue { key: "FIELDS", .. }
    ));
    assert!(matches!(
        error(b"FIELDS x\nSIZE 4\nTYPE F\nWIDTH -1\nDATA ascii\n"),
        PcdError::BadValue { key: "WIDTH", .. }
    ));
    // Ascii: too few values, and a value that does not fit its type.
    assert!(matches!(
        error(b"FIELDS x\nSIZE 4\nTYPE F\nWIDTH 3\nDATA ascii\n1 2\n"),
        PcdError::AsciiTooShort {
            expected: 3,
            found: 2
        }
    ));
    let err = error(b"FIELDS x l\nSIZE 4 1\nTYPE F U\nWIDTH 1\nDATA ascii\n1 256\n");
    assert!(matches!(err, PcdError::AsciiValue { point: 0, .. }));
    assert_eq!(
        err.to_string(),
        "PCD ascii point 0, field `l`: `256` is not a valid UINT8"
    );
    // Binary: truncated.
    let mut truncated = binary_file();
    truncated.truncate(truncated.len() - 1);
    assert!(matches!(error(&truncated), PcdError::Truncated { .. }));

    // Hostile sizes: billions of points over a few bytes, refused before allocating.
    for data in ["ascii", "binary", "binary_compressed"] {
        let pcd = format!(
            "FIELDS x y z\nSIZE 8 8 8\nTYPE F F F\nCOUNT 1000 1000 1000\nWIDTH 4000000000\n\
             HEIGHT 4000000000\nDATA {data}\n\x10\0\0\0\0\0\0\x10abcdefgh"
        );
        let err = error(pcd.as_bytes());
        assert!(
            matches!(
                err,
                PcdError::TooLarge { .. }
                    | PcdError::Truncated { .. }
                    | PcdError::AsciiTooShort { .. }
                    | PcdError::CompressedSize { .. }
            ),
            "{data}: {err:?}"
        );
        let pcd =
            format!("FIELDS x\nSIZE 4\nTYPE F\nWIDTH 60000\nHEIGHT 60000\nDATA {data}\n1 2 3\n");
        assert!(PointCloud::from_pcd(pcd.as_bytes()).is_err(), "{data}");
    }

    // Compressed: sizes that disagree with the header, an impossible ratio, corrupt LZF.
    let good = compressed_file(3, 1, &POINTS);
    let at = header("binary_compressed", 3, 1).len();
    let with_sizes = |compressed: u32, uncompressed: u32| {
        let mut bytes = good.clone();
        bytes[at..at + 4].copy_from_slice(&compressed.to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&uncompressed.to_le_bytes());
        bytes
    };
    let real_compressed = u32::from_le_bytes(good[at..at + 4].try_into().expect("4 bytes"));
    assert!(matches!(
        error(&with_sizes(real_compressed, 61)),
        PcdError::CompressedSize { .. }
    ));
    assert!(matches!(
        error(&with_sizes(real_compressed + 1, 60)),
        PcdError::Truncated { .. }
    ));
    assert!(matches!(
        error(&with_sizes(0, 60)),
        PcdError::CompressedSize { .. }
    ));
    let mut corrupt = good.clone();
    let last = corrupt.len() - 1;
    corrupt[at + 8] = 0xFF; // a back-reference before the start of the output
    corrupt[last] ^= 0x55;
    assert!(matches!(
        error(&corrupt),
        PcdError::Lzf(_) | PcdError::CompressedSize { .. }
    ));
    assert!(matches!(error(&good[..at + 5]), PcdError::Truncated { .. }));

    // The cloud built must be valid as a PointCloud too (duplicate field names).
    assert!(matches!(
        error(b"FIELDS x x\nSIZE 4 4\nTYPE F F\nWIDTH 1\nDATA ascii\n1 2\n"),
        PcdError::Cloud(PointCloudError::DuplicateField { .. })
    ));
}
