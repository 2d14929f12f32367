//! The build script's edits of the planned device actions (`Build::edit_plan`; `mcpp_build::plan`
//! re-exports these types): an argument added to one compile changes that shader's bytes and
//! reruns it alone; an added input reruns its action when edited; an order between actions;
//! and the refusals (an in-process action's arguments, an unknown or own id, a cycle, an input
//! that nothing provides, the edit's own refusal), each naming `Build::edit_plan`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::plan::edit::Plan;
use cargo_mcpp::rules::external::Refusal;
use harness::*;
use std::sync::Arc;

const A: &str = "spirv:shaders/a/scale.comp";
const B: &str = "spirv:shaders/b/scale.comp";

fn with_edit(
    pkg: &Package,
    edit: impl Fn(&mut Plan) -> Result<(), Refusal> + Send + Sync + 'static,
) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    b.edit_plan(Arc::new(edit));
    b
}

#[test]
fn an_edited_argument_changes_that_shaders_bytes_and_reruns_it_alone() {
    let pkg = shader_package("glslang");
    pkg.compile(&pkg.build());
    let (a, b) = (
        pkg.embedded_bytes("shaders/a/scale.comp"),
        pkg.embedded_bytes("shaders/b/scale.comp"),
    );
    // A workgroup of 32 for shader a only: its define replaced.
    let edit = |plan: &mut Plan| {
        let action = plan
            .action_mut(A)
            .ok_or_else(|| Refusal::new("no action for shader a"))?;
        assert!(!action.is_in_process() && action.program().ends_with("glslangValidator"));
        let define = action
            .args_mut()
            .iter_mut()
            .find(|x| *x == "-DWORKGROUP=64")
            .ok_or_else(|| Refusal::new("no define"))?;
        *define = "-DWORKGROUP=32".into();
        Ok(())
    };
    let outcome = pkg.compile(&with_edit(&pkg, edit));
    assert_eq!(
        outcome.report.ran,
        vec![A.to_string()],
        "{:?}",
        outcome.report
    );
    assert_ne!(
        pkg.embedded_bytes("shaders/a/scale.comp"),
        a,
        "the edited argument reached the compiler"
    );
    assert_eq!(pkg.embedded_bytes("shaders/b/scale.comp"), b);
    assert!(pkg
        .compiles("glslangValidator")
        .last()
        .unwrap()
        .contains("-DWORKGROUP=32"));
    // The same edit again: nothing runs. Without it: shader a is compiled back.
    assert!(pkg.compile(&with_edit(&pkg, edit)).report.ran.is_empty());
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, vec![A.to_string()]);
    assert_eq!(pkg.embedded_bytes("shaders/a/scale.comp"), a);
}

#[test]
fn an_added_input_reruns_its_action_and_run_after_orders_two_actions() {
    let pkg = shader_package("glslang");
    pkg.write("tables/factor.txt", "2");
    let table = pkg.path("tables/factor.txt");
    let edit = move |plan: &mut Plan| {
        plan.action_mut(A)
            .ok_or_else(|| Refusal::new("no shader a"))?
            .add_input(table.clone());
        // b runs after a, although the plan has no file between them.
        plan.action_mut(B)
            .ok_or_else(|| Refusal::new("no shader b"))?
            .run_after(A);
        Ok(())
    };
    let outcome = pkg.compile(&with_edit(&pkg, edit.clone()));
    assert_eq!(
        outcome.report.ran,
        vec![A.to_string(), B.to_string()],
        "a before b: {:?}",
        outcome.report
    );
    assert!(pkg
        .compile(&with_edit(&pkg, edit.clone()))
        .report
        .ran
        .is_empty());
    pkg.write("tables/factor.txt", "3");
    let outcome = pkg.compile(&with_edit(&pkg, edit.clone()));
    assert_eq!(
        outcome.report.ran,
        vec![A.to_string(), B.to_string()],
        "the input's edit reruns a, and b after it: {:?}",
        outcome.report
    );
}

#[test]
fn what_an_edit_cannot_do_is_refused_naming_build_edit_plan() {
    let pkg = shader_package("glslang");
    let refuse = |edit: fn(&mut Plan) -> Result<(), Refusal>| pkg.refuse(&with_edit(&pkg, edit));
    let e = refuse(|p| {
        p.action_mut(A).unwrap().run_after("spirv:nothing");
        Ok(())
    });
    assert!(
        e.contains("Build::edit_plan")
            && e.contains("which is no action of this build")
            && e.contains(B),
        "{e}"
    );
    let e = refuse(|p| {
        p.action_mut(A).unwrap().run_after(A);
        Ok(())
    });
    assert!(e.contains("is to run after itself"), "{e}");
    let e = refuse(|p| {
        p.action_mut(A).unwrap().run_after(B);
        p.action_mut(B).unwrap().run_after(A);
        Ok(())
    });
    assert!(
        e.contains("make a cycle") && e.contains(A) && e.contains(B),
        "{e}"
    );
    let e = refuse(|p| {
        p.action_mut(A).unwrap().add_input("/no/such/input.txt");
        Ok(())
    });
    assert!(
        e.contains("/no/such/input.txt") && e.contains("does not exist, and no action writes it"),
        "{e}"
    );
    let e = refuse(|_| {
        Err(Refusal::new("the vendor table is missing")
            .key("tables")
            .help("run the table generator first"))
    });
    assert!(
        e.contains("the vendor table is missing (about `tables`)")
            && e.contains("run the table generator first"),
        "{e}"
    );

    // An in-process action (WGSL through naga) has no arguments to edit.
    let wgsl = Package::new(&[
        (
            "Cargo.toml",
            &manifest(
                "wgsl-edit",
                "accel = \"vulkan1.2\"\nsources = [\"s/*.wgsl\"]",
            ),
        ),
        ("s/k.wgsl", "@compute @workgroup_size(1)\nfn main() {}\n"),
    ]);
    let e = wgsl.refuse(&with_edit(&wgsl, |p| {
        let a = p.action_mut("wgsl:s/k.wgsl").unwrap();
        assert!(a.is_in_process());
        a.args_mut().push("--fast".into());
        Ok(())
    }));
    assert!(
        e.contains("`wgsl:s/k.wgsl` runs in process and has no arguments to edit"),
        "{e}"
    );
}
