//! The simulated world's sensors: determinism, agreement of colour, depth and lidar,
//! rates on the manual clock, odometry against the truth.

use std::time::Duration;

use streamwire::prelude::*;
use streamwire_modules::world::{SimCamera, SimDepth, SimLidar, SimOdometry, World, world_time};

fn at_ms(ms: u64) -> Timestamp {
    Timestamp::from_nanos(1_000_000_000 + ms * 1_000_000)
}

#[test]
fn the_camera_is_deterministic_from_its_seed() {
    let run = |seed: u64| {
        let mut harness = Harness::new(SimCamera {
            width: 96,
            height: 54,
            seed,
            ..SimCamera::default()
        });
        let ports = harness.ports();
        for _ in 0..5 {
            harness.run_until_idle().unwrap();
            harness.clock().advance(Duration::from_millis(50));
        }
        harness.take(ports.color_image)
    };
    let (a, b, other) = (run(3), run(3), run(4));
    assert_eq!(a.len(), 5);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.message.data(), y.message.data(), "same seed, same pixels");
        assert_eq!(x.message.stamp(), y.message.stamp());
    }
    assert_ne!(a[0].message.data(), other[0].message.data(), "another seed");
    assert_ne!(a[0].message.data(), a[1].message.data(), "the world moves");
    // Stamps on the 50 ms grid.
    let stamps: Vec<u64> = a.iter().map(|d| d.message.stamp().as_nanos()).collect();
    assert_eq!(
        stamps,
        (0..5).map(|k| at_ms(k * 50).as_nanos()).collect::<Vec<_>>()
    );
}

#[test]
fn depth_edges_coincide_with_colour_edges() {
    let (w, h) = (320u32, 180u32);
    let camera = SimCamera {
        width: w,
        height: h,
        ..SimCamera::default()
    };
    let depth = SimDepth {
        width: w,
        height: h,
        ..SimDepth::default()
    };
    let mut edges = 0usize;
    let mut matched = 0usize;
    for ms in [0u64, 2_000, 4_000, 9_000, 15_000, 21_000] {
        let color = camera.frame_at(at_ms(ms)).unwrap();
        let depth = depth.frame_at(at_ms(ms)).unwrap();
        for y in 0..h {
            for x in 1..w - 2 {
                let (Some(a), Some(b)) = (depth.depth_mm(x, y), depth.depth_mm(x + 1, y)) else {
                    continue;
                };
                let (a, b) = (f64::from(a), f64::from(b));
                if (a - b).abs() < 150.0_f64.max(0.08 * a.min(b)) {
                    continue;
                }
                edges += 1;
                let diff = |u: u32| {
                    let (p, q) = (color.pixel(u, y).unwrap(), color.pixel(u + 1, y).unwrap());
                    p.iter()
                        .zip(q)
                        .map(|(&p, &q)| u32::from(p.abs_diff(q)))
                        .sum::<u32>()
                };
                if (x - 1..=x + 1).map(diff).max().unwrap_or(0) > 40 {
                    matched += 1;
                }
            }
        }
    }
    assert!(edges > 50, "the scene has depth edges: {edges}");
    assert!(
        matched as f64 >= 0.98 * edges as f64,
        "{matched} of {edges} depth edges have a colour edge"
    );
}

#[test]
fn the_lidar_sees_the_same_geometry() {
    let lidar = SimLidar::default();
    let world = World::new(lidar.seed);
    let stamp = at_ms(3_000);
    let cloud = lidar.scan_at(stamp).unwrap();
    assert_eq!(cloud.len(), 30 * 1024);
    let t = world_time(stamp);
    let pose = world.robot_pose(t);
    let (sin, cos) = pose.yaw.sin_cos();
    let (mut solid, mut on_surface) = (0usize, 0usize);
    for [x, y, z] in cloud.xyz().unwrap() {
        let (x, y, z) = (f64::from(x), f64::from(y), f64::from(z));
        if !(0.1..=2.0).contains(&z) {
            continue;
        }
        solid += 1;
        let (wx, wy) = (pose.x + x * cos - y * sin, pose.y + x * sin + y * cos);
        let near = [
            (0.0, 0.0),
            (0.05, 0.0),
            (-0.05, 0.0),
            (0.0, 0.05),
            (0.0, -0.05),
        ];
        if near
            .iter()
            .any(|(dx, dy)| world.occupied(t, wx + dx, wy + dy))
        {
            on_surface += 1;
        }
    }
    assert!(solid > 5_000, "{solid}");
    assert!(
        on_surface as f64 >= 0.99 * solid as f64,
        "{on_surface} of {solid}"
    );
}

#[test]
fn sensors_keep_their_rates_on_the_run_clock() {
    let mut lidar = Harness::new(SimLidar {
        azimuths: 64,
        ..SimLidar::default()
    });
    let mut odometry = Harness::new(SimOdometry::default());
    let (lp, op) = (lidar.ports(), odometry.ports());
    for _ in 0..100 {
        lidar.run_until_idle().unwrap();
        odometry.run_until_idle().unwrap();
        lidar.clock().advance(Duration::from_millis(10));
        odometry.clock().advance(Duration::from_millis(10));
    }
    // One second (100 steps of 10 ms, the first at 0): 10 scans, 50 samples.
    assert_eq!(lidar.take(lp.cloud).len(), 10);
    let samples = odometry.take(op.odometry);
    assert_eq!(samples.len(), 50);
    let world = World::new(1);
    for sample in &samples {
        let truth = world.robot_pose(world_time(sample.message.stamp()));
        let p = sample.message.pose().position;
        assert!((p.x - truth.x).abs() <= 0.0101 && (p.y - truth.y).abs() <= 0.0101);
        assert!(sample.message.twist().linear.x > 0.1, "the robot moves");
    }
    assert_ne!(
        samples[0].message.pose().position.x
            - world.robot_pose(world_time(samples[0].message.stamp())).x,
        0.0,
        "with noise"
    );
}
