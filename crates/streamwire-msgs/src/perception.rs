//! What perception modules publish: detected boxes and occupancy grids.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// Why a detection or an occupancy grid was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PerceptionError {
    /// A box coordinate or score is NaN or infinite.
    #[error("detection box holds a NaN or infinite value")]
    NotFinite,
    /// A box with a negative width or height.
    #[error("detection box has a negative size {width}x{height}")]
    NegativeSize {
        /// Width in pixels.
        width: f32,
        /// Height in pixels.
        height: f32,
    },
    /// A grid whose cell buffer does not hold `width * height` cells.
    #[error("occupancy grid of {width}x{height} cells needs {expected} bytes, got {actual}")]
    GridSize {
        /// Cells per row.
        width: u32,
        /// Rows.
        height: u32,
        /// `width * height`, or `u64::MAX` on overflow.
        expected: u64,
        /// Bytes given.
        actual: usize,
    },
    /// A grid resolution or origin that is not a positive finite number (the origin only
    /// finite).
    #[error("occupancy grid resolution {resolution} m/cell or origin is not valid")]
    BadGeometry {
        /// Metres per cell.
        resolution: f64,
    },
    /// A cell value other than -1 (unknown) or 0..=100 (occupancy probability in percent).
    #[error("occupancy grid cell {index} holds {value}: cells are -1 (unknown) or 0..=100")]
    BadCell {
        /// Row-major index of the cell.
        index: usize,
        /// Its value.
        value: i8,
    },
}

/// One detected object in an image: an axis-aligned box in pixels, a label and a score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "BoxRepr")]
pub struct DetectionBox {
    x: f32,
    y: f32,
    width: f32,
    height: f32,
    label: Arc<str>,
    score: f32,
}

#[derive(Deserialize)]
struct BoxRepr {
    x: f32,
    y: f32,
    width: f32,
    height: f32,
    label: Arc<str>,
    score: f32,
}

impl TryFrom<BoxRepr> for DetectionBox {
    type Error = PerceptionError;

    fn try_from(r: BoxRepr) -> Result<DetectionBox, PerceptionError> {
        DetectionBox::new(r.x, r.y, r.width, r.height, r.label, r.score)
    }
}

impl DetectionBox {
    /// A box with its top-left corner at `(x, y)` pixels, `width x height` pixels large,
    /// labelled `label` with confidence `score` (finite; sizes not negative).
    ///
    /// ```
    /// use streamwire::msgs::DetectionBox;
    /// let b = DetectionBox::new(10.0, 20.0, 30.0, 40.0, "ball", 0.9)?;
    /// assert_eq!(b.area(), 1200.0);
    /// assert!(DetectionBox::new(0.0, 0.0, -1.0, 1.0, "ball", 1.0).is_err());
    /// # Ok::<(), streamwire::msgs::PerceptionError>(())
    /// ```
    pub fn new(
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        label: impl Into<Arc<str>>,
        score: f32,
    ) -> Result<DetectionBox, PerceptionError> {
        if ![x, y, width, height, score].iter().all(|v| v.is_finite()) {
            return Err(PerceptionError::NotFinite);
        }
        if width < 0.0 || height < 0.0 {
            return Err(PerceptionError::NegativeSize { width, height });
        }
        Ok(DetectionBox {
            x,
            y,
            width,
            height,
            label: label.into(),
            score,
        })
    }

    /// Left edge in pixels.
    pub fn x(&self) -> f32 {
        self.x
    }

    /// Top edge in pixels.
    pub fn y(&self) -> f32 {
        self.y
    }

    /// Width in pixels.
    pub fn width(&self) -> f32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> f32 {
        self.height
    }

    /// What was detected.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Confidence, as the detector defines it.
    pub fn score(&self) -> f32 {
        self.score
    }

    /// Width times height.
    pub fn area(&self) -> f32 {
        self.width * self.height
    }

    /// Intersection over union with `other`, 0 to 1 (0 when both are empty).
    ///
    /// ```
    /// use streamwire::msgs::DetectionBox;
    /// let a = DetectionBox::new(0.0, 0.0, 10.0, 10.0, "a", 1.0)?;
    /// let b = DetectionBox::new(5.0, 0.0, 10.0, 10.0, "a", 1.0)?;
    /// assert!((a.iou(&b) - 50.0 / 150.0).abs() < 1e-6);
    /// # Ok::<(), streamwire::msgs::PerceptionError>(())
    /// ```
    pub fn iou(&self, other: &DetectionBox) -> f32 {
        let left = self.x.max(other.x);
        let top = self.y.max(other.y);
        let right = (self.x + self.width).min(other.x + other.width);
        let bottom = (self.y + self.height).min(other.y + other.height);
        let inter = (right - left).max(0.0) * (bottom - top).max(0.0);
        let union = self.area() + other.area() - inter;
        if union > 0.0 { inter / union } else { 0.0 }
    }
}

/// The objects a detector found in one image (as `vision_msgs/Detection2DArray`); the
/// stamp is the image's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Detections", crate = streamwire_core)]
pub struct Detections {
    /// Sensor time of the image the boxes are in.
    pub stamp: Timestamp,
    /// Coordinate frame of that image.
    pub frame_id: Arc<str>,
    /// The boxes (validated each by [`DetectionBox::new`]).
    pub boxes: Vec<DetectionBox>,
}

/// A 2D occupancy grid, as `nav_msgs/OccupancyGrid`: `height` rows of `width` cells,
/// row-major from the cell at `origin` (its corner with the smallest x and y), each -1
/// (unknown) or an occupancy probability 0..=100.
///
/// ```
/// use streamwire::Timestamp;
/// use streamwire::msgs::OccupancyGrid;
/// let grid = OccupancyGrid::new("odom", 0.1, (-1.0, -1.0), 20, 20, vec![-1i8; 400])?
///     .with_stamp(Timestamp::from_nanos(5));
/// assert_eq!(grid.cell_at(0.05, 0.05), Some(-1));
/// assert_eq!(grid.cell_at(5.0, 0.0), None);
/// assert!(OccupancyGrid::new("odom", 0.1, (0.0, 0.0), 2, 2, vec![0i8, 0, 101, 0]).is_err());
/// # Ok::<(), streamwire::msgs::PerceptionError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/OccupancyGrid", crate = streamwire_core)]
#[serde(try_from = "GridRepr")]
pub struct OccupancyGrid {
    stamp: Timestamp,
    frame_id: Arc<str>,
    resolution: f64,
    origin: (f64, f64),
    width: u32,
    height: u32,
    #[serde(with = "streamwire_core::blob")]
    cells: Bytes,
}

#[derive(Deserialize)]
struct GridRepr {
    stamp: Timestamp,
    frame_id: Arc<str>,
    resolution: f64,
    origin: (f64, f64),
    width: u32,
    height: u32,
    #[serde(with = "streamwire_core::blob")]
    cells: Bytes,
}

impl TryFrom<GridRepr> for OccupancyGrid {
    type Error = PerceptionError;

    fn try_from(r: GridRepr) -> Result<OccupancyGrid, PerceptionError> {
        let cells: Vec<i8> = r.cells.iter().map(|&b| b as i8).collect();
        Ok(
            OccupancyGrid::new(r.frame_id, r.resolution, r.origin, r.width, r.height, cells)?
                .with_stamp(r.stamp),
        )
    }
}

impl OccupancyGrid {
    /// A grid in `frame_id` of `resolution` metres per cell whose first cell's corner is
    /// at `origin` (x, y metres); `cells` holds `width * height` values, each -1 or 0..=100.
    pub fn new(
        frame_id: impl Into<Arc<str>>,
        resolution: f64,
        origin: (f64, f64),
        width: u32,
        height: u32,
        cells: Vec<i8>,
    ) -> Result<OccupancyGrid, PerceptionError> {
        if !(resolution.is_finite()
            && resolution > 0.0
            && origin.0.is_finite()
            && origin.1.is_finite())
        {
            return Err(PerceptionError::BadGeometry { resolution });
        }
        let expected = u64::from(width).saturating_mul(u64::from(height));
        if usize::try_from(expected).ok() != Some(cells.len()) {
            return Err(PerceptionError::GridSize {
                width,
                height,
                expected,
                actual: cells.len(),
            });
        }
        if let Some((index, &value)) = cells
            .iter()
            .enumerate()
            .find(|&(_, &v)| !(v == -1 || (0..=100).contains(&v)))
        {
            return Err(PerceptionError::BadCell { index, value });
        }
        let cells: Vec<u8> = cells.into_iter().map(|v| v as u8).collect();
        Ok(OccupancyGrid {
            stamp: Timestamp::ZERO,
            frame_id: frame_id.into(),
            resolution,
            origin,
            width,
            height,
            cells: Bytes::from(cells),
        })
    }

    /// This grid with the sensor time `stamp`.
    pub fn with_stamp(mut self, stamp: Timestamp) -> OccupancyGrid {
        self.stamp = stamp;
        self
    }

    /// When the newest data in the grid was captured.
    pub fn stamp(&self) -> Timestamp {
        self.stamp
    }

    /// The frame the grid lies in.
    pub fn frame_id(&self) -> &str {
        &self.frame_id
    }

    /// Metres per cell.
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// The corner of cell (0, 0) in metres.
    pub fn origin(&self) -> (f64, f64) {
        self.origin
    }

    /// Cells per row.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Cell (`col`, `row`): -1 unknown, else 0..=100.
    pub fn cell(&self, col: u32, row: u32) -> Option<i8> {
        if col >= self.width || row >= self.height {
            return None;
        }
        let index = row as usize * self.width as usize + col as usize;
        self.cells.get(index).map(|&b| b as i8)
    }

    /// The cell holding the point (`x`, `y`) metres, if inside the grid.
    pub fn cell_at(&self, x: f64, y: f64) -> Option<i8> {
        let col = ((x - self.origin.0) / self.resolution).floor();
        let row = ((y - self.origin.1) / self.resolution).floor();
        if col < 0.0 || row < 0.0 || col >= f64::from(self.width) || row >= f64::from(self.height) {
            return None;
        }
        self.cell(col as u32, row as u32)
    }

    /// Every cell, row-major.
    pub fn cells(&self) -> impl ExactSizeIterator<Item = i8> + '_ {
        self.cells.iter().map(|&b| b as i8)
    }
}
