//! `yurtctl images list`: the images a conversion pulls, for mirroring into a private registry
//! (reads only the profile; never contacts a cluster); `yurtctl images pull`: whether each
//! node can pull them (read-only node Jobs, deleted afterwards).

use crate::app::common::print_structured;
use crate::app::error::CommandError;
use crate::cli::{GlobalArgs, ImagesCommand, ImagesListCmd};
use crate::exit::Exit;
use crate::output::ImageList;
use crate::plan::{ConvertOptions, ConvertSettings, check_images};
use crate::render::{Profile, pulled_images};

pub fn run(g: &GlobalArgs, cmd: &ImagesCommand) -> Exit {
    let list = match cmd {
        ImagesCommand::List(list) => list,
        ImagesCommand::Pull(pull) => return super::images_pull::run(g, pull),
    };
    match image_list(list) {
        Ok(l) => {
            if !print_structured(g, &l) {
                for i in &l.images {
                    println!("{}", i.image);
                }
            }
            Exit::Ok
        }
        Err(e) => e.report(),
    }
}

fn image_list(cmd: &ImagesListCmd) -> Result<ImageList, CommandError> {
    images_of(&cmd.profile, &cmd.images)
}

/// The images convert pulls with `profile` and these image flags (checked against it).
pub(super) fn images_of(
    profile: &str,
    flags: &crate::cli::ImageFlags,
) -> Result<ImageList, CommandError> {
    let profile = Profile::load(profile)?;
    let mut opts = ConvertOptions {
        profile: profile.name.clone(),
        ..Default::default()
    };
    flags.apply(&mut opts);
    check_images(&opts, &profile)?;
    let settings = ConvertSettings::resolve(&opts, &profile);
    Ok(ImageList {
        header: crate::naming::ResultHeader::of("ImageList"),
        profile: profile.name.clone(),
        openyurt_version: opts
            .openyurt_version
            .unwrap_or_else(|| profile.openyurt_version.clone()),
        images: pulled_images(&profile, &settings.images)?,
    })
}
