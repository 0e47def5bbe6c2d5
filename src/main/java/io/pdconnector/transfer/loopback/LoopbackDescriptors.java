package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.PreparedDescriptors;

record LoopbackDescriptors(LoopbackAgent agent, DescriptorList list) implements PreparedDescriptors {

    @Override
    public String owner() {
        return agent.name();
    }

    @Override
    public int count() {
        return list.count();
    }
}
