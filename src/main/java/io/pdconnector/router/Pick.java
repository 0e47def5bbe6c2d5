package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;

/** The P and the D one attempt of a request goes to. */
public record Pick(InstanceRecord producer, InstanceRecord decoder) {
}
