//! Added by `cargo mcpp init --lane __LANE__`: runs the compute shader `__SOURCE__`, compiled to
//! SPIR-V by `cargo mcpp build` and embedded through the generated surface, on the first Vulkan
//! device (lavapipe, Mesa's CPU driver, where there is no GPU) with ash, and checks the result.
//! Without a Vulkan device it says so and exits 2; built with `--no-accel` (no shader compiled)
//! it says that and exits 0.

mod shaders {
    include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"));
}

/// Built with `--no-accel` (or an accelerator set without vulkan): no shader was compiled.
#[cfg(not(mcpp_accel = "vulkan"))]
fn main() {
    let accel = match env!("MCPP_BUILD_ACCEL") {
        "" => "none",
        set => set,
    };
    // The accessors exist in every build; without vulkan their payloads are empty.
    let built = shaders::all().iter().filter(|p| !p.is_empty()).count();
    println!("__FILE__: not compiled in this build (accelerator set {accel}, {built} shaders built), nothing to run");
}

#[cfg(mcpp_accel = "vulkan")]
fn main() {
    let code: &[u32] = shaders::__SHADER__().code;
    let input: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let gpu = match vulkan::Gpu::first() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let out = match gpu.run(code, &input) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("the dispatch failed: {e}");
            std::process::exit(3);
        }
    };
    assert!(input.iter().zip(&out).all(|(x, y)| *y == 2.0 * x), "every element doubled");
    println!("__FILE__ ({} words of SPIR-V) doubled {} floats on {}: y[100] = {}", code.len(), out.len(), gpu.name, out[100]);
}

/// The smallest compute dispatch: one storage buffer at binding 0, host-visible memory.
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
            let entry = unsafe { ash::Entry::load() }
                .map_err(|e| format!("no Vulkan device is present: no Vulkan loader ({e}); install libvulkan1 and a driver (mesa-vulkan-drivers has lavapipe, a CPU device)"))?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
            // SAFETY: valid create info; the instance is destroyed in Drop or below.
            let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
                .map_err(|e| format!("no Vulkan device is present: creating an instance failed ({e}); install a Vulkan driver (mesa-vulkan-drivers)"))?;
            // SAFETY: the instance is live.
            let physicals = unsafe { instance.enumerate_physical_devices() }.unwrap_or_default();
            let found = physicals.iter().find_map(|&p| {
                // SAFETY: `p` comes from this instance.
                let families = unsafe { instance.get_physical_device_queue_family_properties(p) };
                families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)).map(|i| (p, i as u32))
            });
            let Some((physical, family)) = found else {
                // SAFETY: nothing was created from the instance.
                unsafe { instance.destroy_instance(None) };
                return Err("no Vulkan device is present (none with a compute queue); install a driver such as mesa-vulkan-drivers (lavapipe)".into());
            };
            // SAFETY: `physical` comes from this instance.
            let props = unsafe { instance.get_physical_device_properties(physical) };
            let name = props.device_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
            // SAFETY: valid create info for a family of `physical`.
            let device = unsafe { instance.create_device(physical, &vk::DeviceCreateInfo::default().queue_create_infos(&queues), None) }
                .map_err(|e| format!("cannot open the Vulkan device {name}: {e}"))?;
            // SAFETY: queue 0 of the family the device was created with.
            let queue = unsafe { device.get_device_queue(family, 0) };
            Ok(Gpu { _entry: entry, instance, physical, device, queue, family, name })
        }

        /// Run the compute shader `spirv` (entry point `main`, local size 64) over a copy of `data`.
        pub fn run(&self, spirv: &[u32], data: &[f32]) -> Result<Vec<f32>, String> {
            let d = &self.device;
            let err = |what: &'static str| move |e: vk::Result| format!("{what}: {e}");
            let size = std::mem::size_of_val(data) as u64;
            // SAFETY: every handle below is created from `d`, used while alive and destroyed
            // after the fence says the queue finished with it.
            unsafe {
                let buffer = d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(vk::BufferUsageFlags::STORAGE_BUFFER), None).map_err(err("create buffer"))?;
                let req = d.get_buffer_memory_requirements(buffer);
                let mem_props = self.instance.get_physical_device_memory_properties(self.physical);
                let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
                let type_index = (0..mem_props.memory_type_count)
                    .find(|&i| req.memory_type_bits & (1 << i) != 0 && mem_props.memory_types[i as usize].property_flags.contains(want))
                    .ok_or("no host-visible coherent memory type")?;
                let memory = d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(type_index), None).map_err(err("allocate memory"))?;
                d.bind_buffer_memory(buffer, memory, 0).map_err(err("bind memory"))?;
                let ptr = d.map_memory(memory, 0, size, vk::MemoryMapFlags::empty()).map_err(err("map memory"))? as *mut f32;
                std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len());

                let bindings = [vk::DescriptorSetLayoutBinding::default()
                    .binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)];
                let set_layout = d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None).map_err(err("descriptor set layout"))?;
                let set_layouts = [set_layout];
                let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None).map_err(err("pipeline layout"))?;
                let module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(spirv), None).map_err(err("shader module"))?;
                let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(c"main");
                let pipeline = d
                    .create_compute_pipelines(vk::PipelineCache::null(), &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)], None)
                    .map_err(|(_, e)| format!("compute pipeline: {e}"))?[0];
                let pool_sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 1 }];
                let pool = d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&pool_sizes), None).map_err(err("descriptor pool"))?;
                let set = d.allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&set_layouts)).map_err(err("descriptor set"))?[0];
                let buffer_info = [vk::DescriptorBufferInfo { buffer, offset: 0, range: size }];
                let write = vk::WriteDescriptorSet::default().dst_set(set).dst_binding(0).descriptor_type(vk::DescriptorType::STORAGE_BUFFER).buffer_info(&buffer_info);
                d.update_descriptor_sets(&[write], &[]);
                let cmd_pool = d.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(self.family), None).map_err(err("command pool"))?;
                let cmd = d.allocate_command_buffers(&vk::CommandBufferAllocateInfo::default().command_pool(cmd_pool).command_buffer_count(1)).map_err(err("command buffer"))?[0];
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()).map_err(err("begin"))?;
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
                d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, layout, 0, &[set], &[]);
                d.cmd_dispatch(cmd, (data.len() as u32).div_ceil(64), 1, 1);
                d.end_command_buffer(cmd).map_err(err("end"))?;
                let fence = d.create_fence(&vk::FenceCreateInfo::default(), None).map_err(err("fence"))?;
                let cmds = [cmd];
                d.queue_submit(self.queue, &[vk::SubmitInfo::default().command_buffers(&cmds)], fence).map_err(err("submit"))?;
                d.wait_for_fences(&[fence], true, u64::MAX).map_err(err("wait"))?;
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
            // SAFETY: nothing created from the device or the instance outlives them.
            unsafe {
                let _ = self.device.device_wait_idle();
                self.device.destroy_device(None);
                self.instance.destroy_instance(None);
            }
        }
    }
}
