package io.pdconnector.controlplane;

import java.util.Collection;

/** What a store reports: a record written, a record gone, or the whole set (after a (re)connect). */
public interface RegistryListener {

    void upsert(InstanceRecord record);

    void remove(String engineId);

    /** Every record the backend holds now; records not in it are gone. */
    void replaceAll(Collection<InstanceRecord> records);

    /** A record that could not be decoded (too large, not JSON, fields out of range): counted, not used. */
    void refused(String key, String reason);
}
