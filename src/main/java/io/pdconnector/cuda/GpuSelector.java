package io.pdconnector.cuda;

import java.util.List;
import java.util.stream.Collectors;

/**
 * Which GPU a TP rank's pool goes on ({@code pd.kv.gpu-uuid}): a UUID, or {@code sole-visible}, the one
 * GPU this container sees. Never an ordinal: ordinals are renumbered per container
 * ({@code CUDA_VISIBLE_DEVICES}, the device plugin), so the same number can mean another GPU to the engine.
 */
public sealed interface GpuSelector {

    String SOLE_VISIBLE = "sole-visible";

    /** Picks this selector's GPU among {@code visible}; throws {@link GpuNotFoundException} with a sentence if none fits. */
    VisibleGpu pick(List<VisibleGpu> visible);

    static GpuSelector parse(String text) {
        return SOLE_VISIBLE.equals(text) ? new SoleVisible() : new ByUuid(GpuUuid.parse(text));
    }

    record ByUuid(GpuUuid uuid) implements GpuSelector {
        @Override
        public VisibleGpu pick(List<VisibleGpu> visible) {
            return visible.stream().filter(g -> g.uuid().equals(uuid)).findFirst().orElseThrow(() ->
                    new GpuNotFoundException("pd.kv.memory=vram: no GPU with UUID " + uuid + " among the "
                            + visible.size() + " this process sees" + list(visible) + "; pd.kv.gpu-uuid must name the "
                            + "engine's GPU as nvidia-smi -L prints it, and that GPU must be given to this container"));
        }

        @Override
        public String toString() {
            return uuid.toString();
        }
    }

    record SoleVisible() implements GpuSelector {
        @Override
        public VisibleGpu pick(List<VisibleGpu> visible) {
            if (visible.size() != 1) {
                throw new GpuNotFoundException("pd.kv.memory=vram with pd.kv.gpu-uuid=sole-visible: this process sees "
                        + visible.size() + " GPUs" + list(visible) + ", not exactly one; give this container the "
                        + "engine's GPU only (one shared GPU claim in the pod), or name the GPU by UUID");
            }
            return visible.getFirst();
        }

        @Override
        public String toString() {
            return SOLE_VISIBLE;
        }
    }

    private static String list(List<VisibleGpu> visible) {
        return visible.isEmpty() ? "" : " (" + visible.stream().map(VisibleGpu::toString).collect(Collectors.joining(", ")) + ")";
    }
}
