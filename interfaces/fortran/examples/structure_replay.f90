!> structure_replay: the structure-alone check. Drives the Fortran flexible side with the
!> rigid motions record_motions.py recorded and writes the same rows as its REFERENCE file
!> (see there), so that the two can be compared number by number.
!>
!>   structure_replay DATA_DIR MOTIONS OUT
program structure_replay
  use, intrinsic :: iso_fortran_env, only: error_unit
  use dense, only: dp
  use flex_endpoint_mod, only: flex_endpoint
  use two_mass_setup, only: load_structure, grounded_reference
  implicit none
  character(len=4096) :: data_dir, motions_path, out_path
  character(len=64) :: scheme
  character(len=:), allocatable :: message
  type(flex_endpoint) :: ep
  integer :: extrapolation, micro_steps, n_steps, added_mass, inp, out, k, ios
  real(dp) :: h, t0, m0(19), rec(40), kin(13), energy, mass(6, 6), jac(6, 6, 2)
  real(dp), allocatable :: poly(:, :)
  logical :: ok, handover, has_jacobian

  if (command_argument_count() /= 3) error stop "usage: structure_replay DATA_DIR MOTIONS OUT"
  call get_command_argument(1, data_dir)
  call get_command_argument(2, motions_path)
  call get_command_argument(3, out_path)
  open (newunit=inp, file=trim(motions_path), status="old", action="read")
  read (inp, *) scheme, extrapolation, micro_steps, h, n_steps, added_mass
  call load_structure(trim(data_dir), trim(scheme), extrapolation, micro_steps, h, &
                      added_mass /= 0, ep, ok, message)
  if (.not. ok) then
    write (error_unit, "(a)") message
    error stop 1
  end if
  read (inp, *) t0, m0
  call ep%initialize(t0, m0, grounded_reference, handover, mass)
  open (newunit=out, file=trim(out_path), status="replace", action="write")
  call ep%report(kin, energy)
  call write_row(kin, energy, ep%polynomial(t0))
  do k = 1, n_steps
    read (inp, *, iostat=ios) rec
    if (ios /= 0) error stop "structure_replay: truncated motions file"
    call ep%report(kin, energy)
    call ep%inputs_for_rigid(rec(1), rec(2:20), poly, jac, has_jacobian, ok)
    if (.not. ok) error stop "structure_replay: non-finite state"
    call write_row(kin, energy, poly)
    if (ep%needs_end_motion()) then
      call ep%finish(rec(1), rec(2:20), rec(22:40), rec(21), ok)
    else
      call ep%finish(rec(1), rec(2:20), ok=ok)
    end if
    if (.not. ok) error stop "structure_replay: non-finite state"
  end do
  call ep%report(kin, energy)
  write (out, "(*(1x, es25.17e3))") kin, energy
  close (out)
  close (inp)

contains

  subroutine write_row(kin, energy, poly)
    real(dp), intent(in) :: kin(13), energy, poly(:, :)
    real(dp) :: padded(6, 3)
    padded = 0.0_dp
    padded(:, 1:size(poly, 2)) = poly
    write (out, "(*(1x, es25.17e3))") kin, energy, real(size(poly, 2), dp), padded
  end subroutine write_row

end program structure_replay
