//! The detector against the world's ground truth, and the mapper's grid against the
//! world's geometry.

use std::time::Duration;

use streamwire::msgs::DetectionBox;
use streamwire::prelude::*;
use streamwire::{Codec, msgs::Jpeg};
use streamwire_modules::detector::Detector;
use streamwire_modules::mapper::Mapper;
use streamwire_modules::world::{SimCamera, SimLidar, SimOdometry, World, world_time};

fn at_ms(ms: u64) -> Timestamp {
    Timestamp::from_nanos(1_000_000_000 + ms * 1_000_000)
}

#[test]
fn the_detector_finds_the_moving_object_where_the_world_put_it() {
    let camera = SimCamera {
        width: 320,
        height: 180,
        ..SimCamera::default()
    };
    let world = World::new(camera.seed);
    let mut harness = Harness::new(Detector::default());
    let ports = harness.ports();
    let (mut visible, mut hidden) = (0, 0);
    for k in 0..60u64 {
        let stamp = at_ms(k * 500);
        let image = camera.frame_at(stamp).unwrap();
        let truth = world
            .render(world_time(stamp), 320, 180, camera.hfov_deg, false)
            .moving_object_box(30);
        // Through the JPEG codec too, as the demo's detector sees it.
        let jpeg = Jpeg::default();
        let decoded: Image = jpeg.decode(&jpeg.encode(&image).unwrap()).unwrap();
        for frame in [image, decoded] {
            harness.feed(ports.frames, frame).unwrap();
            harness.run_until_idle().unwrap();
            let found = harness.take(ports.detections);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].message.stamp, stamp);
            let boxes = &found[0].message.boxes;
            match truth {
                Some((x, y, w, h)) if w * h >= 100 => {
                    visible += 1;
                    let truth = DetectionBox::new(x as f32, y as f32, w as f32, h as f32, "t", 1.0)
                        .unwrap();
                    assert_eq!(boxes.len(), 1, "at {k}: {truth:?}");
                    let iou = boxes[0].iou(&truth);
                    assert!(iou >= 0.8, "at {k}: IoU {iou}: {:?} vs {truth:?}", boxes[0]);
                }
                None => {
                    hidden += 1;
                    assert!(boxes.is_empty(), "at {k}: {boxes:?}");
                }
                // A sliver at the image's edge: either answer is fine.
                Some(_) => {}
            }
        }
    }
    assert!(
        visible >= 10 && hidden >= 10,
        "visible {visible}, hidden {hidden}"
    );
}

#[test]
fn the_mapper_builds_the_rooms_grid_at_one_hertz() {
    let lidar = SimLidar::default();
    let odometry = SimOdometry::default();
    let world = World::new(lidar.seed);
    let mut harness = Harness::new(Mapper::default());
    let ports = harness.ports();
    let mut maps = Vec::new();
    for k in 0..=30u64 {
        // 10 Hz scans for three seconds, each with the odometry of its instant.
        let stamp = at_ms(k * 100);
        harness
            .feed(ports.odometry, odometry.sample_at(stamp).unwrap())
            .unwrap();
        harness
            .feed(ports.cloud, lidar.scan_at(stamp).unwrap())
            .unwrap();
        harness.run_until_idle().unwrap();
        maps.extend(harness.take(ports.map));
        harness.clock().advance(Duration::from_millis(100));
    }
    // At 0, 1, 2 and 3 s of the run clock.
    assert_eq!(maps.len(), 4);
    let grid = &maps[3].message;
    assert_eq!(grid.stamp(), at_ms(3_000));
    let t = world_time(at_ms(3_000));
    let res = grid.resolution();
    let (mut occupied, mut occupied_ok, mut free, mut free_ok) = (0, 0, 0, 0);
    for row in 0..grid.height() {
        for col in 0..grid.width() {
            let value = grid.cell(col, row).unwrap();
            let x = grid.origin().0 + (f64::from(col) + 0.5) * res;
            let y = grid.origin().1 + (f64::from(row) + 0.5) * res;
            let near = |r: f64| {
                [(0.0, 0.0), (r, 0.0), (-r, 0.0), (0.0, r), (0.0, -r)]
                    .iter()
                    .any(|(dx, dy)| world.occupied(t, x + dx, y + dy))
            };
            if value >= 65 {
                occupied += 1;
                occupied_ok += usize::from(near(0.15));
            } else if (0..=35).contains(&value) {
                free += 1;
                free_ok += usize::from(!world.occupied(t, x, y));
            }
        }
    }
    assert!(
        occupied > 200 && free > 1000,
        "occupied {occupied}, free {free}"
    );
    assert!(
        occupied_ok as f64 >= 0.95 * occupied as f64,
        "{occupied_ok} of {occupied}"
    );
    assert!(free_ok as f64 >= 0.98 * free as f64, "{free_ok} of {free}");
}

#[test]
fn the_mapper_builds_a_grid_from_depth_too() {
    use streamwire_modules::world::SimDepth;
    let depth = SimDepth::default();
    let odometry = SimOdometry::default();
    let world = World::new(depth.seed);
    let mut harness = Harness::new(Mapper::default());
    let ports = harness.ports();
    let mut maps = Vec::new();
    for k in 0..=20u64 {
        let stamp = at_ms(k * 100);
        harness
            .feed(ports.odometry, odometry.sample_at(stamp).unwrap())
            .unwrap();
        harness
            .feed(ports.depth, depth.frame_at(stamp).unwrap())
            .unwrap();
        harness.run_until_idle().unwrap();
        maps.extend(harness.take(ports.map));
        harness.clock().advance(Duration::from_millis(100));
    }
    assert_eq!(maps.len(), 3);
    assert_eq!(harness.counter("depth_frames"), 21);
    let grid = &maps[2].message;
    let t = world_time(grid.stamp());
    let res = grid.resolution();
    let (mut occupied, mut occupied_ok) = (0, 0);
    for row in 0..grid.height() {
        for col in 0..grid.width() {
            if grid.cell(col, row).unwrap() >= 65 {
                let x = grid.origin().0 + (f64::from(col) + 0.5) * res;
                let y = grid.origin().1 + (f64::from(row) + 0.5) * res;
                occupied += 1;
                let near = [
                    (0.0, 0.0),
                    (0.15, 0.0),
                    (-0.15, 0.0),
                    (0.0, 0.15),
                    (0.0, -0.15),
                ];
                occupied_ok += usize::from(
                    near.iter()
                        .any(|(dx, dy)| world.occupied(t, x + dx, y + dy)),
                );
            }
        }
    }
    assert!(occupied > 50, "occupied {occupied}");
    assert!(
        occupied_ok as f64 >= 0.95 * occupied as f64,
        "{occupied_ok} of {occupied}"
    );
}
