//! Runs the three compute shaders cargo-mcpp compiled and embedded (two GLSL, one Slang), on the
//! first Vulkan device (lavapipe, Mesa's CPU driver, on machines without a GPU), and checks what
//! they computed.

mod shaders {
    include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
}

fn main() {
    if let Err(e) = run() {
        eprintln!("vulkan-compute: {e}");
        std::process::exit(1);
    }
}

/// Built with `--no-accel` (or an accelerator set without vulkan): no shader was compiled.
#[cfg(not(mcpp_accel = "vulkan"))]
fn run() -> Result<(), String> {
    // The accessors exist in every build; without vulkan their payloads are empty.
    let built = shaders::all().iter().filter(|p| !p.is_empty()).count();
    println!(
        "vulkan-compute: built for the accelerator set `{}`, which names no vulkan; {built} of {} shaders built, nothing to run",
        env!("MCPP_BUILD_ACCEL"),
        shaders::all().len()
    );
    Ok(())
}

#[cfg(mcpp_accel = "vulkan")]
fn run() -> Result<(), String> {
    let input: Vec<f32> = (0..256).map(|i| i as f32 * 0.5).collect();
    let gpu = vulkan::Gpu::first()?;
    println!("vulkan-compute: device: {}", gpu.name);
    let common = include_str!("../shaders/include/common.glsl");
    let (scale, offset) = (
        constant(common, "common.glsl", "const float SCALE")?,
        constant(common, "common.glsl", "const float OFFSET")?,
    );
    let affine = include_str!("../shaders/modules/affine.slang");
    let (slope, bias) = (
        constant(affine, "affine.slang", "public static const float SLOPE")?,
        constant(affine, "affine.slang", "public static const float BIAS")?,
    );
    let cases: [(shaders::Payload, &dyn Fn(f32) -> f32); 3] = [
        (shaders::a::scale_comp(), &|x| x * scale + offset),
        (shaders::b::scale_comp(), &|x| x * x),
        (shaders::c::scale_comp(), &|x| x * slope + bias),
    ];
    for (payload, expected) in cases {
        let got = gpu.run(payload.code, &input)?;
        println!(
            "{} ({} bytes of SPIR-V): [{}, {}, {}, {}, ...] sum = {}",
            payload.source,
            payload.size_bytes,
            got[0],
            got[1],
            got[2],
            got[3],
            got.iter().sum::<f32>()
        );
        for (i, (&x, &y)) in input.iter().zip(&got).enumerate() {
            if (expected(x) - y).abs() > 1e-3 {
                return Err(format!(
                    "{}: element {i}: expected {}, the device computed {y}",
                    payload.source,
                    expected(x)
                ));
            }
        }
    }
    println!("vulkan-compute: all results match");
    Ok(())
}

/// The value of `<declaration> = <number>;` in a shader source (SCALE and OFFSET in
/// shaders/include/common.glsl, SLOPE and BIAS in shaders/modules/affine.slang), compiled in, so
/// an edit there rebuilds this check together with the shader.
#[cfg(mcpp_accel = "vulkan")]
fn constant(text: &str, file: &str, declaration: &str) -> Result<f32, String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{declaration} = ")))
        .and_then(|v| v.trim_end_matches(';').trim().parse().ok())
        .ok_or_else(|| format!("{file} has no `{declaration} = <number>;`"))
}

#[cfg(mcpp_accel = "vulkan")]
mod vulkan {
    use ash::vk;

    /// The first Vulkan device with a compute queue.
    pub struct Gpu {
        _entry: ash::Entry,
        instance: ash::Instance,
        physical: vk::PhysicalDevice,
        device: ash::Device,
        queue: vk::Queue,
        family: u32,
        pub name: String,
    }

    impl Gpu {
        pub fn first() -> Result<Gpu, String> {
            // SAFETY: loading the system Vulkan loader; no other Vulkan use in this process.
            let entry = unsafe { ash::Entry::load() }.map_err(|e| {
                format!("no Vulkan loader found ({e}): install libvulkan1 and a driver (mesa-vulkan-drivers provides lavapipe, a CPU device)")
            })?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
            let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
                .map_err(|e| format!("no Vulkan device is present: creating an instance failed ({e}); install a Vulkan driver (e.g. mesa-vulkan-drivers)"))?;
            let physicals = unsafe { instance.enumerate_physical_devices() }
                .map_err(|e| format!("cannot list Vulkan devices: {e}"))?;
            let found = physicals.iter().find_map(|&p| {
                let families = unsafe { instance.get_physical_device_queue_family_properties(p) };
                families
                    .iter()
                    .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
                    .map(|i| (p, i as u32))
            });
            let Some((physical, family)) = found else {
                unsafe { instance.destroy_instance(None) };
                return Err("no Vulkan device is present (the loader found no device with a compute queue); install a driver such as mesa-vulkan-drivers (lavapipe)".into());
            };
            let props = unsafe { instance.get_physical_device_properties(physical) };
            let name = props
                .device_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            let priorities = [1.0f32];
            let queue_info = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family)
                .queue_priorities(&priorities)];
            let device = unsafe {
                instance.create_device(
                    physical,
                    &vk::DeviceCreateInfo::default().queue_create_infos(&queue_info),
                    None,
                )
            }
            .map_err(|e| format!("cannot open the Vulkan device {name}: {e}"))?;
            let queue = unsafe { device.get_device_queue(family, 0) };
            Ok(Gpu {
                _entry: entry,
                instance,
                physical,
                device,
                queue,
                family,
                name,
            })
        }

        /// Run the compute shader `spirv` over a copy of `data` (one storage buffer at binding 0).
        pub fn run(&self, spirv: &[u32], data: &[f32]) -> Result<Vec<f32>, String> {
            let d = &self.device;
            let err = |what: &str| {
                let what = what.to_string();
                move |e: vk::Result| format!("{what}: {e}")
            };
            let size = std::mem::size_of_val(data) as u64;
            unsafe {
                let buffer = d
                    .create_buffer(
                        &vk::BufferCreateInfo::default()
                            .size(size)
                            .usage(vk::BufferUsageFlags::STORAGE_BUFFER),
                        None,
                    )
                    .map_err(err("create buffer"))?;
                let req = d.get_buffer_memory_requirements(buffer);
                let mem_props = self
                    .instance
                    .get_physical_device_memory_properties(self.physical);
                let want =
                    vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
                let type_index = (0..mem_props.memory_type_count)
                    .find(|&i| {
                        req.memory_type_bits & (1 << i) != 0
                            && mem_props.memory_types[i as usize]
                                .property_flags
                                .contains(want)
                    })
                    .ok_or("no host-visible coherent memory type")?;
                let memory = d
                    .allocate_memory(
                        &vk::MemoryAllocateInfo::default()
                            .allocation_size(req.size)
                            .memory_type_index(type_index),
                        None,
                    )
                    .map_err(err("allocate memory"))?;
                d.bind_buffer_memory(buffer, memory, 0)
                    .map_err(err("bind memory"))?;
                let ptr = d
                    .map_memory(memory, 0, size, vk::MemoryMapFlags::empty())
                    .map_err(err("map memory"))? as *mut f32;
                std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len());

                let bindings = [vk::DescriptorSetLayoutBinding::default()
                    .binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)];
                let set_layout = d
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                        None,
                    )
                    .map_err(err("descriptor set layout"))?;
                let set_layouts = [set_layout];
                let layout = d
                    .create_pipeline_layout(
                        &vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts),
                        None,
                    )
                    .map_err(err("pipeline layout"))?;
                let module = d
                    .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(spirv), None)
                    .map_err(err("shader module"))?;
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(module)
                    .name(c"main");
                let pipeline = d
                    .create_compute_pipelines(
                        vk::PipelineCache::null(),
                        &[vk::ComputePipelineCreateInfo::default()
                            .stage(stage)
                            .layout(layout)],
                        None,
                    )
                    .map_err(|(_, e)| format!("compute pipeline: {e}"))?[0];
                let pool_sizes = [vk::DescriptorPoolSize {
                    ty: vk::DescriptorType::STORAGE_BUFFER,
                    descriptor_count: 1,
                }];
                let pool = d
                    .create_descriptor_pool(
                        &vk::DescriptorPoolCreateInfo::default()
                            .max_sets(1)
                            .pool_sizes(&pool_sizes),
                        None,
                    )
                    .map_err(err("descriptor pool"))?;
                let set = d
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(pool)
                            .set_layouts(&set_layouts),
                    )
                    .map_err(err("descriptor set"))?[0];
                let buffer_info = [vk::DescriptorBufferInfo {
                    buffer,
                    offset: 0,
                    range: size,
                }];
                let write = vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&buffer_info);
                d.update_descriptor_sets(&[write], &[]);
                let cmd_pool = d
                    .create_command_pool(
                        &vk::CommandPoolCreateInfo::default().queue_family_index(self.family),
                        None,
                    )
                    .map_err(err("command pool"))?;
                let cmd = d
                    .allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(cmd_pool)
                            .command_buffer_count(1),
                    )
                    .map_err(err("command buffer"))?[0];
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                    .map_err(err("begin"))?;
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
                d.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    layout,
                    0,
                    &[set],
                    &[],
                );
                // One workgroup per element is more than enough whatever WORKGROUP is: the
                // shaders ignore invocations past the end of the buffer.
                d.cmd_dispatch(cmd, data.len() as u32, 1, 1);
                d.end_command_buffer(cmd).map_err(err("end"))?;
                let fence = d
                    .create_fence(&vk::FenceCreateInfo::default(), None)
                    .map_err(err("fence"))?;
                let cmds = [cmd];
                d.queue_submit(
                    self.queue,
                    &[vk::SubmitInfo::default().command_buffers(&cmds)],
                    fence,
                )
                .map_err(err("submit"))?;
                d.wait_for_fences(&[fence], true, u64::MAX)
                    .map_err(err("wait"))?;
                let out = std::slice::from_raw_parts(ptr, data.len()).to_vec();

                d.destroy_fence(fence, None);
                d.destroy_command_pool(cmd_pool, None);
                d.destroy_descriptor_pool(pool, None);
                d.destroy_pipeline(pipeline, None);
                d.destroy_shader_module(module, None);
                d.destroy_pipeline_layout(layout, None);
                d.destroy_descriptor_set_layout(set_layout, None);
                d.unmap_memory(memory);
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
                Ok(out)
            }
        }
    }

    impl Drop for Gpu {
        fn drop(&mut self) {
            unsafe {
                let _ = self.device.device_wait_idle();
                self.device.destroy_device(None);
                self.instance.destroy_instance(None);
            }
        }
    }
}
