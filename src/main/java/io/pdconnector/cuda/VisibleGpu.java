package io.pdconnector.cuda;

/** A GPU this process sees: its ordinal here (renumbered per container), its UUID, its name. */
public record VisibleGpu(int ordinal, int device, GpuUuid uuid, String name) {

    @Override
    public String toString() {
        return uuid + " (" + name + ", ordinal " + ordinal + " here)";
    }
}
