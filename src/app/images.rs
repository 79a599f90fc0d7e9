//! `yurtctl images list`: the images a conversion pulls, for mirroring into a private registry.
//! Reads only the profile; never contacts a cluster.

use crate::app::common::print_structured;
use crate::app::error::CommandError;
use crate::cli::{GlobalArgs, ImagesCommand, ImagesListCmd};
use crate::exit::Exit;
use crate::output::ImageList;
use crate::plan::{ConvertOptions, ConvertSettings, check_images};
use crate::render::{Profile, pulled_images};

pub fn run(g: &GlobalArgs, cmd: &ImagesCommand) -> Exit {
    let ImagesCommand::List(list) = cmd;
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
    let profile = Profile::load(&cmd.profile)?;
    let mut opts = ConvertOptions {
        profile: cmd.profile.clone(),
        ..Default::default()
    };
    cmd.images.apply(&mut opts);
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
