//! Print the layer profiles of the full-size networks, and how the conv / FC split behind
//! "one weird trick" falls out of them. Run: `cargo run --example profiles`.

use owt_models::{AlexNet2012Config, AlexNetOwtConfig};

fn main() {
    for arch in [AlexNet2012Config::new().architecture(), AlexNetOwtConfig::new().architecture()] {
        let p = arch.profile().expect("the paper geometry is valid");
        let (conv_p, conv_m) = p.sum_by_prefix("conv");
        let (fc_p, fc_m) = p.sum_by_prefix("fc");
        println!(
            "{}: {} parameters; conv {:.1}% of parameters / {:.1}% of MACs; fc {:.1}% / {:.1}%",
            p.model,
            p.total_params,
            100.0 * conv_p as f64 / p.total_params as f64,
            100.0 * conv_m as f64 / p.total_macs as f64,
            100.0 * fc_p as f64 / p.total_params as f64,
            100.0 * fc_m as f64 / p.total_macs as f64
        );
    }
}
