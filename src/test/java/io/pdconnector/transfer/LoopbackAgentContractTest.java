package io.pdconnector.transfer;

import io.pdconnector.transfer.loopback.LoopbackTransferEngine;

class LoopbackAgentContractTest extends TransferAgentContract {

    @Override
    protected TransferEngine openEngine() {
        return new LoopbackTransferEngine();
    }

    @Override
    protected ForeignPeer foreignPeer(TransferAgent to) {
        LoopbackTransferEngine loopback = (LoopbackTransferEngine) engine;
        return new ForeignPeer() {
            @Override
            public String name() {
                return "foreign-peer";
            }

            @Override
            public void send(byte[] message) {
                loopback.deliverUnchecked(name(), to.name(), message);
            }

            @Override
            public void close() {
            }
        };
    }
}
