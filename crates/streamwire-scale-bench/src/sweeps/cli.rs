//! `bench scale`: the sweeps on the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use streamwire_cli::{CommandContext, seconds};

use super::{Sweep, SweepOptions, rows};

/// `bench scale` arguments.
#[derive(clap::Args)]
pub struct ScaleArgs {
    /// The sweep: consumers, streams, processes, or all.
    #[arg(long, value_name = "SWEEP", default_value = "all")]
    sweep: String,
    /// Its sizes, comma-separated (default: consumers 1,2,4,8,16,32; streams
    /// 1,16,64,256,1024; processes 2,4,8,16,32).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    sizes: Vec<u32>,
    /// The series of the consumers sweep: raw, jpeg (default both).
    #[arg(long, value_name = "SERIES", value_delimiter = ',')]
    series: Vec<String>,
    /// Seconds each point's run runs once every worker is ready.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    duration: f64,
    /// The most consumer processes of the consumers sweep (consumers are spread over
    /// them round-robin).
    #[arg(long, value_name = "N", default_value_t = 8)]
    consumer_processes: u32,
    /// Where each point's folder, and per sweep the CSV, the table and the chart go.
    #[arg(long, value_name = "DIR", default_value = "target/bench-scale")]
    out: PathBuf,
    /// The program whose `run` runs each point (default: this one), to measure another
    /// build with this one's sweeps.
    #[arg(long, value_name = "PATH")]
    program: Option<PathBuf>,
}

/// The sweeps `args` names, with their options.
fn sweep_options(args: &ScaleArgs) -> anyhow::Result<Vec<SweepOptions>> {
    let sweeps: Vec<Sweep> = if args.sweep == "all" {
        Sweep::ALL.to_vec()
    } else {
        vec![args.sweep.parse().map_err(anyhow::Error::msg)?]
    };
    let duration = seconds("--duration", args.duration)?;
    let mut all = Vec::new();
    for sweep in sweeps {
        let mut options = SweepOptions::new(sweep, &args.out);
        options.duration = duration;
        options.consumer_processes = args.consumer_processes.max(1);
        if !args.sizes.is_empty() {
            options.sizes.clone_from(&args.sizes);
        }
        if !args.series.is_empty() && sweep == Sweep::Consumers {
            options.series.clone_from(&args.series);
        }
        options.check()?;
        all.push(options);
    }
    Ok(all)
}

/// Runs the sweeps, writes each one's CSV, table and chart, prints the tables and the
/// growth of the cost per unit.
pub fn scale_command(args: ScaleArgs, cx: &mut CommandContext<'_>) -> anyhow::Result<ExitCode> {
    let all = sweep_options(&args)?;
    let exe = match &args.program {
        Some(program) => program.clone(),
        None => {
            std::env::current_exe().context("cannot find this program to run the blueprints")?
        }
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let ctrl_c = cx.stop.clone();
    streamwire_cli::on_ctrl_c(move || ctrl_c.store(true, Ordering::SeqCst));
    let mut unbalanced = 0;
    for options in &all {
        eprintln!(
            "scale: {} sweep, sizes {:?}, {} s a point, into {}",
            options.sweep,
            options.sizes,
            options.duration.as_secs_f64(),
            options.out.display()
        );
        let stop = cx.stop.clone();
        let points = super::run(
            options,
            &exe,
            &|| stop.load(Ordering::SeqCst),
            &mut |line| {
                eprintln!("scale: {line}");
            },
        )?;
        unbalanced += points.iter().filter(|p| !p.measured.balanced).count();
        let failed: Vec<String> = points
            .iter()
            .filter_map(|p| {
                let failure = p.measured.failure.as_ref()?;
                Some(format!("  {} {}: {failure}", p.series, p.size))
            })
            .collect();
        let table = rows::table(options.sweep, &points);
        let name = options.sweep.name();
        let write = |file: String, text: String| {
            let path = options.out.join(file);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
        };
        write(format!("{name}.csv"), table.csv())?;
        write(format!("{name}.txt"), table.text())?;
        rows::chart(&options.out, &table, &format!("Scale: the {name} sweep"))?;
        writeln!(
            cx.out,
            "{name} sweep ({} s a point):\n{}",
            options.duration.as_secs_f64(),
            table.text()
        )?;
        if !failed.is_empty() {
            writeln!(
                cx.out,
                "failed (no report; each point's run.log):\n{}",
                failed.join("\n")
            )?;
        }
        for (what, ratio, smallest, largest) in table.unit_cost_growth() {
            writeln!(
                cx.out,
                "  {what}: largest size {largest:.3}, smallest {smallest:.3}: x{ratio:.2} (goal <= 1.5)"
            )?;
        }
    }
    if unbalanced > 0 {
        writeln!(
            cx.out,
            "scale: {unbalanced} point(s) whose report does not balance"
        )?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
